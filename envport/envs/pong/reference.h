/* Puffer Pong: the C reference (see /work/shared/specs/pong.md and reference.c).
 *
 * This header is also the cffi cdef of envport.envs.pong._pong_c: build_reference.py drops the
 * preprocessor lines and hands the rest to ffibuilder.cdef, so keep it to plain declarations. */
#pragma once
#include <stdint.h>

typedef struct {
    float paddle_yl, paddle_yr, ball_x, ball_y, ball_vx, ball_vy;
    uint32_t score_l, score_r;
    int32_t tick;
    uint32_t rng;
    float obs[8];
    float reward;
    uint8_t terminal;
    int32_t tape_count;
    int32_t tape_r;
    int32_t frameskip;
    int32_t continuous;
} Pong;

void pong_init(Pong* env, int frameskip, int continuous);
void pong_reset(Pong* env, uint32_t seed);
void pong_step(Pong* env, float action);
void pong_compute_obs(Pong* env);
void pong_step_many(Pong* envs, int n, const float* actions);
double pong_bench(int num_envs, int64_t steps_per_env, int threads, int frameskip, uint32_t seed);
