/* Puffer Pong: the project's C reference of PufferLib's native C Pong ("ocean/pong").
 *
 * Rule book: /work/shared/specs/pong.md. This file follows the original's c_step / c_reset /
 * reset_round / compute_observations operation for operation, with the game constants read from
 * the struct as the original reads them, so every operation on the state is the same float32
 * operation as in the original:
 *   - all state is float32 except the scores (unsigned int);
 *   - the observation's indices 6 and 7 are computed by UNSIGNED INTEGER division (always 0 in a
 *     reachable state), then converted to float;
 *   - rules 61f27b3: on a point that does not end the episode the step returns before the
 *     observation is computed, so the observation buffer keeps the previous sub-frame's
 *     observation, and a return off the agent's paddle gives +0.1; rules 8e3e754: the serve's
 *     observation is computed before returning, and a return gives nothing;
 *   - rewards are assigned, not summed (the last assignment in a step wins);
 *   - at episode end the game is reset inside the step (terminal = 1 and the returned observation
 *     is already the first observation of the next episode);
 *   - the observation is computed at the end of EVERY sub-frame, as in the original.
 *
 * Randomness follows PufferLib 4.0: a per-environment `unsigned int rng` state used with the C
 * library's rand_r (glibc's real one). The only draw is the round reset's vy. The "tape" records,
 * for the last step (or reset), how many draws were consumed (0 or 1: a point returns
 * immediately, so a step resets at most one round) and the raw value rand_r returned.
 *
 * Floating point: compile WITHOUT -ffast-math and with -ffp-contract=off (no FMA contraction:
 * `vy + increment * dir` must round twice, as in the original on x86-64).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reference.h"

/* The game constants live in env->params (PufferLib reads the same fields from its struct);
 * their defaults are PufferLib's config (envport/envs/pong/params.py, PONG_DEFAULTS below).
 * Every routine takes them as `p`: the verified game passes &env->params, the throughput
 * benchmark the compile-time defaults (so gcc folds them, as the constants were before params
 * became data). Derived values are computed in float32 in the original's order:
 * min_paddle_y = -paddle_height / 2, max_paddle_y = height - paddle_height / 2 (divisions by
 * 2 are exact), width / 5 a true division. */
enum { PONG_RULES_61F27B3 = 0, PONG_RULES_8E3E754 = 1 };

static const PongParams PONG_DEFAULTS = {
    .width = 500.0f, .height = 640.0f, .paddle_width = 20.0f, .paddle_height = 70.0f,
    .ball_width = 32.0f, .ball_height = 32.0f, .paddle_speed = 8.0f,
    .ball_initial_speed_x = 10.0f, .ball_initial_speed_y = 1.0f,
    .ball_speed_y_increment = 3.0f, .ball_max_speed_y = 13.0f, .max_score = 21u,
};

#define PONG_INLINE static inline __attribute__((always_inline))

/* fmaxf(x, lo) / fminf(x, hi) for a non-NaN bound, written so that gcc inlines them (a NaN x
 * gives the bound, as fmaxf/fminf do). The clip is fminf(fmaxf(x, lo), hi) as in the original. */
PONG_INLINE float clipf(float x, float lo, float hi) {
    x = (x > lo) ? x : lo;
    return (x < hi) ? x : hi;
}

PONG_INLINE float min_paddle_y(const PongParams* p) { return -p->paddle_height / 2.0f; }
PONG_INLINE float max_paddle_y(const PongParams* p) { return p->height - p->paddle_height / 2.0f; }

PONG_INLINE void compute_obs(Pong* env, const PongParams* p) {
    float lo = min_paddle_y(p), hi = max_paddle_y(p);
    env->obs[0] = (env->paddle_yl - lo) / (hi - lo);
    env->obs[1] = (env->paddle_yr - lo) / (hi - lo);
    env->obs[2] = env->ball_x / p->width;
    env->obs[3] = env->ball_y / p->height;
    env->obs[4] = (env->ball_vx + p->ball_initial_speed_x) / (2.0f * p->ball_initial_speed_x);
    env->obs[5] = (env->ball_vy + p->ball_max_speed_y) / (2.0f * p->ball_max_speed_y);
    /* Quirk: unsigned integer division, then conversion to float. */
    env->obs[6] = (float)(env->score_l / p->max_score);
    env->obs[7] = (float)(env->score_r / p->max_score);
}

void pong_compute_obs(Pong* env) { compute_obs(env, &env->params); }

/* The original's reset_round. */
PONG_INLINE void round_reset(Pong* env, const PongParams* p) {
    env->paddle_yl = p->height / 2.0f - p->paddle_height / 2.0f;
    env->paddle_yr = p->height / 2.0f - p->paddle_height / 2.0f;
    env->ball_x = p->width / 5.0f;
    env->ball_y = p->height / 2.0f - p->ball_height / 2.0f;
    env->ball_vx = p->ball_initial_speed_x;
    int r = rand_r(&env->rng);
    env->tape_count += 1;
    env->tape_r = r;
    /* (rand() % 2 - 1) * ball_initial_speed_y: an int (0 or -1) times a float. */
    env->ball_vy = (float)(r % 2 - 1) * p->ball_initial_speed_y;
    env->tick = 0;
}

/* The original's c_reset (also called inside a step at episode end). */
PONG_INLINE void game_reset(Pong* env, const PongParams* p) {
    round_reset(env, p);
    env->score_l = 0;
    env->score_r = 0;
    compute_obs(env, p);
}

/* A point that does not end the episode: the round restarts and the step returns at once.
 * Under 61f27b3 no observation is computed (the buffer keeps the previous sub-frame's); under
 * 8e3e754 the serve's observation is. */
PONG_INLINE void point_reset(Pong* env, const PongParams* p) {
    round_reset(env, p);
    if (env->rules == PONG_RULES_8E3E754) {
        compute_obs(env, p);
    }
}

void pong_init(Pong* env, int frameskip, int continuous, int rules, const PongParams* params) {
    memset(env, 0, sizeof(*env));
    env->frameskip = frameskip;
    env->continuous = continuous;
    env->rules = rules;
    env->params = *params;
}

void pong_default_params(PongParams* out) { *out = PONG_DEFAULTS; }

void pong_reset(Pong* env, uint32_t seed) {
    env->rng = seed;
    env->reward = 0.0f;
    env->terminal = 0;
    env->tape_count = 0;
    env->tape_r = 0;
    game_reset(env, &env->params);
}

PONG_INLINE void step_inline(Pong* env, const PongParams* p, float action) {
    env->tick += 1;
    env->reward = 0.0f;
    env->terminal = 0;
    env->tape_count = 0;
    env->tape_r = 0;

    float dir;
    if (env->continuous) {
        dir = action;
    } else {
        dir = 0.0f;
        if (action == 0.0f) {
            dir = 0.0f;
        } else if (action == 1.0f) {
            dir = 1.0f;
        } else if (action == 2.0f) {
            dir = -1.0f;
        }
    }

    float lo = min_paddle_y(p), hi = max_paddle_y(p);
    for (int i = 0; i < env->frameskip; i++) {
        env->paddle_yr += p->paddle_speed * dir;

        /* Opponent tracks the ball's bottom edge. */
        float opp_delta = env->ball_y - (env->paddle_yl + p->paddle_height / 2.0f);
        opp_delta = clipf(opp_delta, -p->paddle_speed, p->paddle_speed);
        env->paddle_yl += opp_delta;

        env->paddle_yr = clipf(env->paddle_yr, lo, hi);
        env->paddle_yl = clipf(env->paddle_yl, lo, hi);

        env->ball_x += env->ball_vx;
        env->ball_y += env->ball_vy;

        /* Walls: bounce, no clipping. */
        if (env->ball_y < 0.0f || env->ball_y + p->ball_height > p->height) {
            env->ball_vy = -env->ball_vy;
        }

        if (env->ball_x < 0.0f) {
            if (env->ball_y + p->ball_height > env->paddle_yl &&
                env->ball_y < env->paddle_yl + p->paddle_height) {
                env->ball_vx = -env->ball_vx;
            } else {
                env->score_r += 1;
                env->reward = 1.0f;
                if (env->score_r == p->max_score) {
                    env->terminal = 1;
                    game_reset(env, p);
                } else {
                    point_reset(env, p);
                }
                return;
            }
        }

        if (env->ball_x + p->ball_width > p->width) {
            if (env->ball_y + p->ball_height > env->paddle_yr &&
                env->ball_y < env->paddle_yr + p->paddle_height) {
                env->ball_vx = -env->ball_vx;
                if (env->rules == PONG_RULES_61F27B3) {
                    env->reward = 0.1f; /* 8e3e754 dropped the reward for a return */
                }
                env->ball_vy += p->ball_speed_y_increment * dir;
                env->ball_vy = clipf(env->ball_vy, -p->ball_max_speed_y, p->ball_max_speed_y);
                /* The original compares the float against the DOUBLE 0.01; for a float x,
                 * x < 0.01 (double) is the same as x <= 0.01f. Kept as in the original. */
                if ((double)fabsf(env->ball_vy) < 0.01) {
                    env->ball_vy = p->ball_speed_y_increment;
                }
            } else {
                env->score_l += 1;
                env->reward = -1.0f;
                if (env->score_l == p->max_score) {
                    env->terminal = 1;
                    game_reset(env, p);
                } else {
                    point_reset(env, p);
                }
                return;
            }
            /* Clip the ball, only after a hit on the agent's paddle. */
            env->ball_x = clipf(env->ball_x, 0.0f, p->width - p->ball_width);
            env->ball_y = clipf(env->ball_y, 0.0f, p->height - p->ball_height);
        }
        compute_obs(env, p);
    }
}

void pong_step(Pong* env, float action) { step_inline(env, &env->params, action); }

void pong_step_many(Pong* envs, int n, const float* actions) {
    for (int i = 0; i < n; i++) {
        step_inline(&envs[i], &envs[i].params, actions[i]);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Throughput benchmark: num_envs environments split into `threads` contiguous chunks, one pthread
 * per chunk. Each thread allocates and resets its own chunk, waits on a barrier, then steps its
 * chunk steps_per_env times the way the C vector env is stepped (for each step, every env of the
 * chunk once) with random discrete actions from a per-thread xorshift32. Returns the wall time of
 * the stepping only (from the barrier to the last thread's end). */

typedef struct {
    int first_env;
    int count;
    int64_t steps;
    int frameskip;
    uint32_t seed;
    pthread_barrier_t* start;
    double start_time;
    double end_time;
    double checksum;
} BenchChunk;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void* bench_thread(void* arg) {
    BenchChunk* chunk = (BenchChunk*)arg;
    int n = chunk->count;
    size_t bytes = sizeof(Pong) * (size_t)(n > 0 ? n : 1);
    bytes = (bytes + 63) / 64 * 64;
    Pong* envs = (Pong*)aligned_alloc(64, bytes);
    for (int i = 0; i < n; i++) {
        pong_init(&envs[i], chunk->frameskip, 0, PONG_RULES_61F27B3, &PONG_DEFAULTS);
        pong_reset(&envs[i], chunk->seed + (uint32_t)(chunk->first_env + i));
    }
    uint32_t x = chunk->seed * 2654435761u + (uint32_t)chunk->first_env * 97u + 1u;
    if (x == 0) {
        x = 1;
    }
    float reward_sum = 0.0f;

    pthread_barrier_wait(chunk->start);
    /* Each worker times itself: the main thread may be descheduled past the barrier and read
     * its clock after a small batch has already finished. */
    chunk->start_time = now_seconds();
    for (int64_t t = 0; t < chunk->steps; t++) {
        for (int i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            float action = (float)(uint32_t)(((uint64_t)x * 3u) >> 32);
            step_inline(&envs[i], &PONG_DEFAULTS, action);
            reward_sum += envs[i].reward;
        }
    }
    chunk->end_time = now_seconds();

    chunk->checksum = (double)reward_sum;
    free(envs);
    return NULL;
}

volatile double pong_bench_checksum;

double pong_bench(int num_envs, int64_t steps_per_env, int threads, int frameskip, uint32_t seed) {
    if (num_envs < 1 || threads < 1 || steps_per_env < 0 || frameskip < 1) {
        return -1.0;
    }
    if (threads > num_envs) {
        threads = num_envs;
    }
    pthread_t* tids = (pthread_t*)calloc((size_t)threads, sizeof(pthread_t));
    BenchChunk* chunks = (BenchChunk*)calloc((size_t)threads, sizeof(BenchChunk));
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1u);

    int base = num_envs / threads, extra = num_envs % threads, first = 0;
    for (int k = 0; k < threads; k++) {
        chunks[k].first_env = first;
        chunks[k].count = base + (k < extra ? 1 : 0);
        chunks[k].steps = steps_per_env;
        chunks[k].frameskip = frameskip;
        chunks[k].seed = seed;
        chunks[k].start = &start;
        first += chunks[k].count;
        pthread_create(&tids[k], NULL, bench_thread, &chunks[k]);
    }
    pthread_barrier_wait(&start);
    double t0 = 0.0, t1 = 0.0, checksum = 0.0;
    for (int k = 0; k < threads; k++) {
        pthread_join(tids[k], NULL);
        /* From the first worker's start to the last worker's end. */
        if (k == 0 || chunks[k].start_time < t0) {
            t0 = chunks[k].start_time;
        }
        if (k == 0 || chunks[k].end_time > t1) {
            t1 = chunks[k].end_time;
        }
        checksum += chunks[k].checksum;
    }
    pong_bench_checksum = checksum;
    pthread_barrier_destroy(&start);
    free(chunks);
    free(tids);
    return t1 - t0;
}
