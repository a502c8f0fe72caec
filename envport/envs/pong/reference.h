/* Puffer Pong: the C reference (see /work/shared/specs/pong.md and reference.c).
 *
 * This header is also the cffi cdef of envport.envs.pong._pong_c: build_reference.py drops the
 * preprocessor lines and hands the rest to ffibuilder.cdef, so keep it to plain declarations. */
#pragma once
#include <stdint.h>

/* The game constants (PufferLib's Pong struct fields of the same names). */
typedef struct {
    float width, height, paddle_width, paddle_height, ball_width, ball_height;
    float paddle_speed, ball_initial_speed_x, ball_initial_speed_y, ball_speed_y_increment;
    float ball_max_speed_y;
    uint32_t max_score;
} PongParams;

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
    int32_t rules; /* 0: PufferLib commit 61f27b3, 1: commit 8e3e754 (see README.md) */
    PongParams params;
} Pong;

void pong_init(Pong* env, int frameskip, int continuous, int rules, const PongParams* params);
void pong_reset(Pong* env, uint32_t seed);
void pong_step(Pong* env, float action);
void pong_compute_obs(Pong* env);
void pong_step_many(Pong* envs, int n, const float* actions);
void pong_default_params(PongParams* out);
/* Steps the default game (compile-time constants), discrete actions, rules 61f27b3. */
double pong_bench(int num_envs, int64_t steps_per_env, int threads, int frameskip, uint32_t seed);
