/*
 * A stand-in for Rockchip's librkllmrt.so (RKLLM runtime 1.3.0), for testing the ctypes binding
 * (models/rkllm_abi.py, models/rkllm_llm.py) on any Linux machine. Written for this project; it
 * implements the ABI of the functions the binding uses: the same structs (64-bit layout, sizes
 * checked below), the same exported names and signatures, the result-callback protocol (NORMAL per
 * token, FINISH at the end, ERROR on failure, the callback's return value 1 pausing the run),
 * rkllm_abort from another thread, and error returns (-1).
 *
 * Generation runs on the caller's thread, as the real rkllm_run does when is_async is false. The
 * reply is scripted: a fixed Chinese sentence whose character 听 is split across two callbacks, with
 * a WAITING callback between (the real runtime's state for an incomplete UTF-8 character).
 *
 * Control, from markers in the prompt text or from the environment:
 *   [[prefill_ms=N]] / STANDIN_RKLLM_PREFILL_MS   prefill time (the abort flag is checked every 2 ms)
 *   [[token_ms=N]]   / STANDIN_RKLLM_TOKEN_MS     time per token
 *   [[long]]          a long reply (until max_new_tokens, or 400 tokens)
 *   [[callback-error]] the run calls back with RKLLM_RUN_ERROR and returns -1
 *   [[run-fail]]       the run returns -1 without calling back
 *   STANDIN_RKLLM_ABORT_BLOCKS=1   rkllm_abort waits until the run has stopped (as reported for the
 *                                  real runtime in rknn-llm#400)
 *   STANDIN_RKLLM_VERBOSE=1        print the runtime banner at init
 * The model file must start with "RKLLM-STANDIN" (else: "invalid model magic", like the real one).
 *
 * Tests observe it through standin_* functions: counters and texts by name, the last RKLLMParam,
 * a gate that lets the run take exactly N steps (prefill is one step, each token one), and waits
 * with a timeout for the run to block at the gate, to start, or to end.
 *
 * Build: gcc -shared -fPIC -pthread -o librkllmrt.so librkllmrt.c [-DSTANDIN_VERSION='"1.2.3"']
 *        [-DSTANDIN_HIDE_ABORT]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef STANDIN_VERSION
#define STANDIN_VERSION "1.3.0"
#endif

#define EXPORT __attribute__((visibility("default")))
#ifdef STANDIN_HIDE_ABORT /* a runtime without rkllm_abort, for the binding's missing-function check */
#define ABORT_EXPORT __attribute__((visibility("hidden")))
#else
#define ABORT_EXPORT EXPORT
#endif

/* ---- the ABI (64-bit layout of RKLLM 1.3.0's rkllm.h) ---- */

typedef void *LLMHandle;
typedef enum { RKLLM_RUN_NORMAL = 0, RKLLM_RUN_WAITING = 1, RKLLM_RUN_FINISH = 2, RKLLM_RUN_ERROR = 3 } LLMCallState;
typedef enum { RKLLM_INPUT_PROMPT = 0, RKLLM_INPUT_TOKEN = 1, RKLLM_INPUT_EMBED = 2, RKLLM_INPUT_MULTIMODAL = 3 } RKLLMInputType;
typedef enum { RKLLM_INFER_GENERATE = 0, RKLLM_INFER_GET_LAST_HIDDEN_LAYER = 1, RKLLM_INFER_GET_LOGITS = 2 } RKLLMInferMode;

typedef struct {
    int32_t base_domain_id;
    int8_t embed_flash;
    int8_t enabled_cpus_num;
    uint32_t enabled_cpus_mask;
    uint8_t n_batch;
    int8_t use_cross_attn;
    uint8_t reserved[104];
} RKLLMExtendParam;

typedef struct {
    const char *model_path;
    int32_t max_context_len;
    int32_t max_new_tokens;
    int32_t top_k;
    int32_t n_keep;
    float top_p;
    float temperature;
    float repeat_penalty;
    float frequency_penalty;
    float presence_penalty;
    int32_t mirostat;
    float mirostat_tau;
    float mirostat_eta;
    bool skip_special_token;
    bool ignore_eos_token;
    bool is_async;
    RKLLMExtendParam extend_param;
} RKLLMParam;

typedef struct { float *embed; size_t n_tokens; } RKLLMEmbedInput;
typedef struct { int32_t *input_ids; size_t n_tokens; } RKLLMTokenInput;
typedef struct {
    char *prompt;
    struct {
        float *image_embed;
        size_t n_image_tokens, n_image;
        const char *image_start, *image_end, *image_content;
        size_t image_width, image_height;
    } image;
    struct {
        float *video_embed;
        size_t n_frame_tokens, n_frame_per_video, n_video;
        const char *video_start, *video_end, *video_content;
        size_t frame_width, frame_height;
    } video;
} RKLLMMultiModalInput;

typedef struct {
    const char *role;
    bool enable_thinking;
    RKLLMInputType input_type;
    union {
        const char *prompt_input;
        RKLLMEmbedInput embed_input;
        RKLLMTokenInput token_input;
        RKLLMMultiModalInput multimodal_input;
    };
} RKLLMInput;

typedef struct { const char *lora_adapter_name; } RKLLMLoraParam;
typedef struct { int save_prompt_cache; const char *prompt_cache_path; } RKLLMPromptCacheParam;
typedef struct {
    int32_t top_k;
    float top_p, temperature, repeat_penalty, frequency_penalty, presence_penalty;
    int32_t mirostat;
    float mirostat_tau, mirostat_eta;
} RKLLMSamplingParam;

typedef struct {
    RKLLMInferMode mode;
    RKLLMLoraParam *lora_params;
    RKLLMPromptCacheParam *prompt_cache_params;
    RKLLMSamplingParam *sampling_params;
    int keep_history;
    int32_t max_new_tokens;
} RKLLMInferParam;

typedef struct { const float *hidden_states; int embd_size; int num_tokens; } RKLLMResultLastHiddenLayer;
typedef struct { const float *logits; int vocab_size; int num_tokens; } RKLLMResultLogits;
typedef struct {
    float prefill_time_ms;
    int prefill_tokens;
    float generate_time_ms;
    int generate_tokens;
    float memory_usage_mb;
} RKLLMPerfStat;

typedef struct {
    const char *text;
    int32_t token_id;
    RKLLMResultLastHiddenLayer last_hidden_layer;
    RKLLMResultLogits logits;
    RKLLMPerfStat perf;
} RKLLMResult;

typedef int (*LLMResultCallback)(RKLLMResult *result, void *userdata, LLMCallState state);
typedef int (*LLMTokenizerCallback)(void *userdata, const char *text, int32_t text_len, int32_t *tokens,
                                    int32_t n_tokens_max);
typedef int (*LLMGetEmbedCallback)(void *userdata, int32_t *tokens, uint64_t num_tokens, void *embed, uint64_t len);

typedef struct {
    LLMResultCallback result_callback;
    void *result_userdata;
    LLMTokenizerCallback tokenizer_callback;
    void *tokenizer_userdata;
    LLMGetEmbedCallback embed_callback;
    void *embed_userdata;
} RKLLMCallback;

_Static_assert(sizeof(RKLLMExtendParam) == 120, "RKLLMExtendParam");
_Static_assert(sizeof(RKLLMParam) == 184, "RKLLMParam");
_Static_assert(sizeof(RKLLMInput) == 160, "RKLLMInput");
_Static_assert(sizeof(RKLLMInferParam) == 40, "RKLLMInferParam");
_Static_assert(sizeof(RKLLMResult) == 72, "RKLLMResult");
_Static_assert(sizeof(RKLLMCallback) == 48, "RKLLMCallback");

/* ---- the runtime ---- */

/* The real runtime prints this banner at init; the binding finds the version string beside it. */
static const char banner[] __attribute__((used)) =
    "I rkllm: rkllm-runtime version: %s, rknpu driver version: %s, platform: %s\n";
static const char runtime_version[] __attribute__((used)) = STANDIN_VERSION;

#define MODEL_MAGIC "RKLLM-STANDIN"
#define CACHE_MAGIC "STANDIN-PROMPT-CACHE 1\n"

typedef struct {
    RKLLMParam param;
    char *model_path;
    RKLLMCallback callback;
    char *system_prompt, *prefix, *postfix;
    atomic_int abort_flag;
} Runtime;

/* What the tests observe; one set per process, guarded by g_lock. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static struct {
    long inits, destroys, live, runs, aborts, kv_clears, kv_keep_system, cache_saves, cache_loads, pauses, tokens;
    long running, blocked, keep_history, max_new_tokens, gate, allowed;
} g;
static char *g_input, *g_prompt, *g_system, *g_prefix, *g_postfix, *g_role, *g_model;
static RKLLMParam g_param;

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static void set_text(char **slot, const char *value) {
    free(*slot);
    *slot = dup_or_null(value);
}

static int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : fallback;
}

static int marker_int(const char *text, const char *key, int fallback) {
    const char *at = strstr(text, key);
    return at ? atoi(at + strlen(key)) : fallback;
}

static void sleep_ms(int ms) {
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) == -1 && errno == EINTR) {
    }
}

/* Wait ``ms``, checking the abort flag every 2 ms; 1 if aborted. */
static int busy_ms(Runtime *rt, int ms) {
    for (int waited = 0; waited < ms; waited += 2) {
        if (atomic_load(&rt->abort_flag)) return 1;
        sleep_ms(ms - waited < 2 ? ms - waited : 2);
    }
    return atomic_load(&rt->abort_flag);
}

/* With the gate on, wait until a step is allowed (or the run is aborted); 1 if aborted. */
static int gate_step(Runtime *rt, long phase) {
    pthread_mutex_lock(&g_lock);
    while (g.gate && g.allowed == 0 && !atomic_load(&rt->abort_flag)) {
        g.blocked = phase;
        pthread_cond_broadcast(&g_cond);
        pthread_cond_wait(&g_cond, &g_lock);
    }
    g.blocked = 0;
    int aborted = atomic_load(&rt->abort_flag);
    if (!aborted && g.gate) g.allowed--;
    pthread_mutex_unlock(&g_lock);
    return aborted;
}

static int wait_until(int (*ready)(long), long arg, int timeout_ms) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&g_lock);
    int ok;
    while (!(ok = ready(arg)) && pthread_cond_timedwait(&g_cond, &g_lock, &deadline) != ETIMEDOUT) {
    }
    ok = ready(arg);
    pthread_mutex_unlock(&g_lock);
    return ok;
}

static int is_blocked(long phase) { return phase ? g.blocked == phase : g.blocked != 0; }
static int is_running(long unused) { (void)unused; return g.running != 0; }
static int is_idle(long unused) { (void)unused; return g.running == 0; }

static void count(long *counter) {
    pthread_mutex_lock(&g_lock);
    (*counter)++;
    pthread_cond_broadcast(&g_cond);
    pthread_mutex_unlock(&g_lock);
}

EXPORT RKLLMParam rkllm_createDefaultParam(void) {
    RKLLMParam p;
    memset(&p, 0, sizeof p);
    p.max_context_len = 512;
    p.max_new_tokens = -1;
    p.top_k = 40;
    p.n_keep = -1;
    p.top_p = 0.9f;
    p.temperature = 0.8f;
    p.repeat_penalty = 1.1f;
    p.mirostat_tau = 5.0f;
    p.mirostat_eta = 0.1f;
    p.extend_param.enabled_cpus_num = 4;
    p.extend_param.enabled_cpus_mask = 0xF0;
    p.extend_param.n_batch = 1;
    return p;
}

EXPORT int rkllm_init(LLMHandle *handle, RKLLMParam *param, RKLLMCallback *callback) {
    if (!handle || !param || !callback || !callback->result_callback) return -1;
    if (getenv("STANDIN_RKLLM_VERBOSE")) fprintf(stderr, banner, runtime_version, "0.9.8", "standin");
    if (!param->model_path) {
        fprintf(stderr, "E rkllm: model_path is NULL\n");
        return -1;
    }
    if (param->max_context_len <= 0 || param->extend_param.n_batch < 1 || param->extend_param.n_batch > 100) {
        fprintf(stderr, "E rkllm: invalid parameters\n");
        return -1;
    }
    FILE *f = fopen(param->model_path, "rb");
    if (!f) {
        fprintf(stderr, "E rkllm: failed to open rkllm model %s\n", param->model_path);
        return -1;
    }
    char magic[sizeof MODEL_MAGIC - 1];
    size_t got = fread(magic, 1, sizeof magic, f);
    fclose(f);
    if (got != sizeof magic || memcmp(magic, MODEL_MAGIC, sizeof magic) != 0) {
        fprintf(stderr, "E rkllm: invalid rknn llm model magic\n");
        return -1;
    }
    Runtime *rt = calloc(1, sizeof *rt);
    if (!rt) return -1;
    rt->param = *param;
    rt->model_path = strdup(param->model_path);
    rt->param.model_path = rt->model_path;
    rt->callback = *callback;
    atomic_init(&rt->abort_flag, 0);
    pthread_mutex_lock(&g_lock);
    g_param = rt->param;
    set_text(&g_model, rt->model_path);
    g.inits++;
    g.live++;
    pthread_mutex_unlock(&g_lock);
    *handle = rt;
    return 0;
}

EXPORT int rkllm_set_chat_template(LLMHandle handle, const char *system_prompt, const char *prompt_prefix,
                                   const char *prompt_postfix) {
    Runtime *rt = handle;
    if (!rt || !system_prompt || !prompt_prefix || !prompt_postfix) return -1;
    set_text(&rt->system_prompt, system_prompt);
    set_text(&rt->prefix, prompt_prefix);
    set_text(&rt->postfix, prompt_postfix);
    pthread_mutex_lock(&g_lock);
    set_text(&g_system, system_prompt);
    set_text(&g_prefix, prompt_prefix);
    set_text(&g_postfix, prompt_postfix);
    pthread_mutex_unlock(&g_lock);
    return 0;
}

static int save_cache(Runtime *rt, const char *path) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fputs(CACHE_MAGIC, f);
    fputs(rt->system_prompt ? rt->system_prompt : "", f);
    fclose(f);
    count(&g.cache_saves);
    return 0;
}

EXPORT int rkllm_load_prompt_cache(LLMHandle handle, const char *prompt_cache_path) {
    if (!handle || !prompt_cache_path) return -1;
    FILE *f = fopen(prompt_cache_path, "rb");
    if (!f) return -1;
    char head[sizeof CACHE_MAGIC - 1];
    size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    if (got != sizeof head || memcmp(head, CACHE_MAGIC, sizeof head) != 0) {
        fprintf(stderr, "E rkllm: invalid prompt cache %s\n", prompt_cache_path);
        return -1;
    }
    count(&g.cache_loads);
    return 0;
}

EXPORT int rkllm_release_prompt_cache(LLMHandle handle) { return handle ? 0 : -1; }

static const char *const short_reply[] = {"你", "好，", "我是", "\xE5\x90", NULL /* WAITING */, "\xAC说", "。"};
static const char *const long_reply[] = {"一", "二", "三", "四", "五", "六", "七", "八", "九", "十"};

static int call(Runtime *rt, void *userdata, LLMCallState state, const char *text, int32_t id, RKLLMPerfStat *perf) {
    RKLLMResult result;
    memset(&result, 0, sizeof result);
    result.text = text;
    result.token_id = id;
    if (perf) result.perf = *perf;
    return rt->callback.result_callback(&result, userdata, state);
}

static int generate(Runtime *rt, const char *input, const RKLLMInferParam *infer, void *userdata) {
    int prefill_ms = marker_int(input, "[[prefill_ms=", env_int("STANDIN_RKLLM_PREFILL_MS", 0));
    int token_ms = marker_int(input, "[[token_ms=", env_int("STANDIN_RKLLM_TOKEN_MS", 0));
    int limit = infer->max_new_tokens > 0 ? infer->max_new_tokens : rt->param.max_new_tokens;
    bool long_one = strstr(input, "[[long]]") != NULL;
    RKLLMPerfStat perf = {0};

    if (busy_ms(rt, prefill_ms) || gate_step(rt, 1)) return 0;  /* aborted during prefill */
    perf.prefill_time_ms = (float)prefill_ms;
    perf.prefill_tokens = (int)(strlen(input) / 3) + 1;
    if (infer->prompt_cache_params && infer->prompt_cache_params->save_prompt_cache &&
        infer->prompt_cache_params->prompt_cache_path &&
        save_cache(rt, infer->prompt_cache_params->prompt_cache_path) != 0)
        return -1;
    if (strstr(input, "[[run-fail]]")) return -1;
    if (strstr(input, "[[callback-error]]")) {
        call(rt, userdata, RKLLM_RUN_ERROR, NULL, -1, NULL);
        return -1;
    }
    int n = long_one ? 400 : (int)(sizeof short_reply / sizeof *short_reply);
    int emitted = 0;
    for (int i = 0; i < n && (limit <= 0 || emitted < limit); i++) {
        const char *piece = long_one ? long_reply[i % 10] : short_reply[i];
        if (!piece) {
            call(rt, userdata, RKLLM_RUN_WAITING, NULL, -1, NULL);
            continue;
        }
        if (busy_ms(rt, token_ms) || gate_step(rt, 2)) return 0;  /* aborted during generation */
        emitted++;
        count(&g.tokens);
        if (call(rt, userdata, RKLLM_RUN_NORMAL, piece, 1000 + i, NULL) == 1) {
            count(&g.pauses);
            return 0;
        }
    }
    perf.generate_tokens = emitted;
    perf.generate_time_ms = (float)(emitted * token_ms);
    perf.memory_usage_mb = 1.0f;
    call(rt, userdata, RKLLM_RUN_FINISH, NULL, -1, &perf);
    return 0;
}

EXPORT int rkllm_run(LLMHandle handle, RKLLMInput *rkllm_input, RKLLMInferParam *rkllm_infer_params, void *userdata) {
    Runtime *rt = handle;
    if (!rt || !rkllm_input || !rkllm_infer_params) return -1;
    if (rkllm_input->input_type != RKLLM_INPUT_PROMPT || !rkllm_input->prompt_input) return -1;
    if (rkllm_infer_params->mode != RKLLM_INFER_GENERATE) return -1;
    const char *input = rkllm_input->prompt_input;
    const char *sys = rt->system_prompt ? rt->system_prompt : "";
    const char *pre = rt->prefix ? rt->prefix : "";
    const char *post = rt->postfix ? rt->postfix : "";
    size_t size = strlen(sys) + strlen(pre) + strlen(input) + strlen(post) + 1;
    char *prompt = malloc(size);
    if (!prompt) return -1;
    snprintf(prompt, size, "%s%s%s%s", sys, pre, input, post);

    pthread_mutex_lock(&g_lock);
    if (g.running) {
        pthread_mutex_unlock(&g_lock);
        free(prompt);
        return -1;  /* one run at a time */
    }
    atomic_store(&rt->abort_flag, 0);  /* an abort applies to the run in flight only */
    g.running = 1;
    g.runs++;
    g.keep_history = rkllm_infer_params->keep_history;
    g.max_new_tokens = rkllm_infer_params->max_new_tokens;
    set_text(&g_input, input);
    set_text(&g_role, rkllm_input->role);
    free(g_prompt);
    g_prompt = prompt;
    pthread_cond_broadcast(&g_cond);
    pthread_mutex_unlock(&g_lock);

    int rc = generate(rt, input, rkllm_infer_params, userdata ? userdata : rt->callback.result_userdata);

    pthread_mutex_lock(&g_lock);
    g.running = 0;
    pthread_cond_broadcast(&g_cond);
    pthread_mutex_unlock(&g_lock);
    return rc;
}

ABORT_EXPORT int rkllm_abort(LLMHandle handle) {
    Runtime *rt = handle;
    if (!rt) return -1;
    pthread_mutex_lock(&g_lock);
    atomic_store(&rt->abort_flag, 1);
    g.aborts++;
    pthread_cond_broadcast(&g_cond);
    if (env_int("STANDIN_RKLLM_ABORT_BLOCKS", 0))
        while (g.running) pthread_cond_wait(&g_cond, &g_lock);
    pthread_mutex_unlock(&g_lock);
    return 0;
}

EXPORT int rkllm_is_running(LLMHandle handle) {
    if (!handle) return -1;
    pthread_mutex_lock(&g_lock);
    int running = (int)g.running;
    pthread_mutex_unlock(&g_lock);
    return running;
}

EXPORT int rkllm_clear_kv_cache(LLMHandle handle, int keep_system_prompt, int *start_pos, int *end_pos) {
    (void)start_pos;
    (void)end_pos;
    if (!handle) return -1;
    pthread_mutex_lock(&g_lock);
    int busy = (int)g.running;
    if (!busy) {
        g.kv_clears++;
        g.kv_keep_system = keep_system_prompt;
    }
    pthread_mutex_unlock(&g_lock);
    return busy ? -1 : 0;
}

EXPORT int rkllm_destroy(LLMHandle handle) {
    Runtime *rt = handle;
    if (!rt) return -1;
    free(rt->model_path);
    free(rt->system_prompt);
    free(rt->prefix);
    free(rt->postfix);
    free(rt);
    pthread_mutex_lock(&g_lock);
    g.destroys++;
    g.live--;
    pthread_mutex_unlock(&g_lock);
    return 0;
}

/* ---- stand-in only: what the tests observe and control ---- */

EXPORT void standin_reset(void) {
    pthread_mutex_lock(&g_lock);
    long running = g.running, live = g.live;
    memset(&g, 0, sizeof g);
    g.running = running;
    g.live = live;
    pthread_cond_broadcast(&g_cond);
    pthread_mutex_unlock(&g_lock);
}

EXPORT long standin_count(const char *name) {
    static const struct { const char *name; size_t offset; } fields[] = {
        {"inits", offsetof(__typeof__(g), inits)},       {"destroys", offsetof(__typeof__(g), destroys)},
        {"live", offsetof(__typeof__(g), live)},         {"runs", offsetof(__typeof__(g), runs)},
        {"aborts", offsetof(__typeof__(g), aborts)},     {"kv_clears", offsetof(__typeof__(g), kv_clears)},
        {"kv_keep_system", offsetof(__typeof__(g), kv_keep_system)},
        {"cache_saves", offsetof(__typeof__(g), cache_saves)},
        {"cache_loads", offsetof(__typeof__(g), cache_loads)},
        {"pauses", offsetof(__typeof__(g), pauses)},     {"tokens", offsetof(__typeof__(g), tokens)},
        {"running", offsetof(__typeof__(g), running)},   {"keep_history", offsetof(__typeof__(g), keep_history)},
        {"max_new_tokens", offsetof(__typeof__(g), max_new_tokens)},
    };
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        if (strcmp(fields[i].name, name) == 0) {
            pthread_mutex_lock(&g_lock);
            long value = *(long *)((char *)&g + fields[i].offset);
            pthread_mutex_unlock(&g_lock);
            return value;
        }
    }
    return -1;
}

/* The last text of that name ("input", "prompt", "system", "prefix", "postfix", "role", "model"),
 * copied into ``out``; its length, or -1 for an unknown name or none yet. */
EXPORT long standin_text(const char *name, char *out, size_t size) {
    const char *value = NULL;
    long length = -1;
    pthread_mutex_lock(&g_lock);
    if (strcmp(name, "input") == 0) value = g_input;
    else if (strcmp(name, "prompt") == 0) value = g_prompt;
    else if (strcmp(name, "system") == 0) value = g_system;
    else if (strcmp(name, "prefix") == 0) value = g_prefix;
    else if (strcmp(name, "postfix") == 0) value = g_postfix;
    else if (strcmp(name, "role") == 0) value = g_role;
    else if (strcmp(name, "model") == 0) value = g_model;
    if (value) {
        length = (long)strlen(value);
        if (out && size) snprintf(out, size, "%s", value);
    }
    pthread_mutex_unlock(&g_lock);
    return length;
}

EXPORT void standin_last_param(RKLLMParam *out) {
    pthread_mutex_lock(&g_lock);
    *out = g_param;
    out->model_path = NULL;  /* freed with its runtime */
    pthread_mutex_unlock(&g_lock);
}

/* Gate on: the run takes only the steps allowed (prefill is one, each token one). */
EXPORT void standin_gate(int enabled) {
    pthread_mutex_lock(&g_lock);
    g.gate = enabled;
    g.allowed = 0;
    pthread_cond_broadcast(&g_cond);
    pthread_mutex_unlock(&g_lock);
}

EXPORT void standin_allow(int steps) {
    pthread_mutex_lock(&g_lock);
    g.allowed += steps;
    pthread_cond_broadcast(&g_cond);
    pthread_mutex_unlock(&g_lock);
}

/* Wait until the run is blocked at the gate (phase 1: prefill, 2: generation, 0: either); 1 if so. */
EXPORT int standin_wait_blocked(int phase, int timeout_ms) { return wait_until(is_blocked, phase, timeout_ms); }
EXPORT int standin_wait_running(int timeout_ms) { return wait_until(is_running, 0, timeout_ms); }
EXPORT int standin_wait_idle(int timeout_ms) { return wait_until(is_idle, 0, timeout_ms); }
