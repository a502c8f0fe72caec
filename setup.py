from setuptools import setup

setup(cffi_modules=["envport/envs/pong/build_reference.py:ffibuilder"])
