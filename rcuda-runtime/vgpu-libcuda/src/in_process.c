/*
 * Serving in the program's own process (VGPU_LIBCUDA_SERVING=in-process): the library starts a JVM inside the
 * program, from the launcher's JVM library and vgpu.jar (VGPU_LIBCUDA_JVM, VGPU_LIBCUDA_CLASS_PATH, which vgpu run
 * sets), and hands each request frame it would write to the local worker's socket to the same Java code
 * (org.vgpu.job.InProcessServing, the local worker's RequestHandler behind it) with one JNI call on the calling thread:
 * the frame goes in a direct buffer, and the reply frames come back in the same buffer. No socket, no other thread.
 * Asynchronous frames wait in that buffer for the next frame that is answered and go with it (DEFERRED_BYTES below).
 *
 * The JVM is made to live in a process that is not its own:
 *   - -Xrs: it installs no handlers of SIGINT, SIGTERM, SIGHUP (its shutdown hooks) nor SIGQUIT (its thread dumps),
 *     so the program's own handlers and Ctrl-C behave as without vgpu. It still installs SIGSEGV, SIGBUS, SIGFPE,
 *     SIGILL and SIGTRAP handlers (its null checks and safepoints fault on purpose) and chains to handlers installed
 *     before it started; a handler the program installs later for those signals overrides the JVM's unless the
 *     program runs with the JDK's libjsig.so preloaded (README.md says when that matters);
 *   - it is created on a thread of its own (a JVM does not start on a process's first thread), and each program
 *     thread that calls is attached once, as a daemon (so the program's exit does not wait for the JVM), and detached
 *     when it ends;
 *   - the serial collector and no perf data file: no collector threads sized for the machine, nothing in /tmp.
 * A child forked after its parent used the vGPUs cannot use the JVM (its threads are not in the child): the library
 * refuses there as it does for the socket's session (serving.c).
 */
#include "serving.h"
#include "contract.h"

#include <dlfcn.h>
#include <jni.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The smallest buffer of a session: a request of the common kinds and their replies fit without growing it. */
#define FIRST_BUFFER_BYTES (64u << 10)
/* Asynchronous requests (launches, asynchronous copies and memsets) wait in the buffer for the next request that is
   answered, and one JNI call then serves them all: a launch and a synchronize cross into the runtime once, not twice.
   The bound is the remote client's batch (RemoteConfig: 64 KiB or 256 requests), which holds a remote vGPU's
   requests until the next synchronizing call all the same. Their failures are reported by a later synchronizing
   call either way. */
#define DEFERRED_BYTES FIRST_BUFFER_BYTES
#define DEFERRED_REQUESTS 256u

struct vgpu_in_process {
    jobject session; /* InProcessWorker.Session, a global reference */
    uint8_t *buffer; /* requests in, replies out */
    size_t capacity;
    jobject buffer_object; /* the direct ByteBuffer over buffer, a global reference */
    size_t inbox_length;   /* replies in buffer, of which inbox_read were read */
    size_t inbox_read;
    uint8_t *held; /* replies not read yet when the next request was written over them */
    size_t held_length;
    size_t held_read;
    size_t deferred; /* bytes of asynchronous requests at the start of buffer, not served yet */
    unsigned deferred_requests;
};

static JavaVM *jvm;
/* for the report: the requests handed to the runtime, and the JNI calls that carried them (and collected replies) */
static _Atomic unsigned long long requests_written;
static _Atomic unsigned long long serve_calls;
static void *jvm_library; /* kept loaded for the process's life: a JVM is not unloaded, even one that failed to start */
static jclass serving_class;
static jmethodID open_session;
static jmethodID close_all;
static jmethodID serve_method;
static jmethodID close_session;
/* the session's answers for direct calls (direct.c); NULL when the runtime is older than them: no direct calls */
static jmethodID offer_direct;
static jmethodID driver_context;
static jmethodID driver_function;
static jmethodID driver_stream;
static char jvm_problem[1024];
static pthread_once_t jvm_started = PTHREAD_ONCE_INIT;
static pthread_key_t attached_thread;

static int in_process_chosen = -1;

int vgpu_in_process_started;

/* Who runs on this thread, for vgpu_in_process_runtime_thread: not known yet, the program, or vgpu's runtime (a
   thread its JVM made). */
enum thread_role { ROLE_NOT_KNOWN, ROLE_PROGRAM, ROLE_RUNTIME };
static __thread enum thread_role thread_role;
/* Above 0 while this thread runs vgpu's runtime: the JVM's start, or a request a program thread hands it. */
static __thread int inside_runtime;

int vgpu_in_process_runtime_thread(void)
{
    if (inside_runtime > 0) {
        return 1;
    }
    if (thread_role == ROLE_NOT_KNOWN) {
        JavaVM *vm = __atomic_load_n(&jvm, __ATOMIC_ACQUIRE);
        if (vm == NULL) {
            return 0; /* the JVM is still starting, on a thread marked inside_runtime: this thread is the program's */
        }
        /* attached to the JVM, but not by this library (thread_env marks the threads it attaches): one the JVM made */
        JNIEnv *env = NULL;
        thread_role = (*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_21) == JNI_OK ? ROLE_RUNTIME : ROLE_PROGRAM;
    }
    return thread_role == ROLE_RUNTIME;
}

int vgpu_in_process_chosen(void)
{
    if (in_process_chosen < 0) {
        const char *serving = getenv(VGPU_ENV_LIBCUDA_SERVING);
        in_process_chosen = serving != NULL && strcmp(serving, "in-process") == 0;
    }
    return in_process_chosen;
}

static void detach_thread(void *unused)
{
    (void)unused;
    (*jvm)->DetachCurrentThread(jvm);
}

/* The calling thread's JNI environment, attaching it at its first call; NULL when the JVM did not start. */
static JNIEnv *thread_env(void)
{
    if (jvm == NULL) {
        return NULL;
    }
    JNIEnv *env = NULL;
    if ((*jvm)->GetEnv(jvm, (void **)&env, JNI_VERSION_21) == JNI_OK) {
        return env;
    }
    thread_role = ROLE_PROGRAM; /* attached by this library: a program thread, though the JVM knows it from now on */
    if ((*jvm)->AttachCurrentThreadAsDaemon(jvm, (void **)&env, NULL) != JNI_OK) {
        return NULL;
    }
    pthread_setspecific(attached_thread, env); /* any non-NULL value: the key's destructor detaches the thread */
    return env;
}

/* Says the Java exception pending on env (its toString) with what was being done, and clears it; 1 if there was one. */
static int said_exception(JNIEnv *env, const char *doing)
{
    jthrowable failure = (*env)->ExceptionOccurred(env);
    if (failure == NULL) {
        return 0;
    }
    (*env)->ExceptionClear(env);
    jclass throwable = (*env)->FindClass(env, "java/lang/Throwable");
    jmethodID to_string = throwable == NULL ? NULL : (*env)->GetMethodID(env, throwable, "toString", "()Ljava/lang/String;");
    jstring text = to_string == NULL ? NULL : (jstring)(*env)->CallObjectMethod(env, failure, to_string);
    const char *chars = text == NULL ? NULL : (*env)->GetStringUTFChars(env, text, NULL);
    vgpu_say("%s failed in vgpu's runtime in this process: %s", doing, chars != NULL ? chars : "(no description)");
    if (chars != NULL) {
        (*env)->ReleaseStringUTFChars(env, text, chars);
    }
    (*env)->ExceptionClear(env);
    return 1;
}

/* Set as the program exits, before its vGPUs are closed: calls after that (the CUDA runtime's own teardown, which runs
   later) are answered as the node's driver answers them once it has torn itself down. */
static int closed_at_exit;

int vgpu_in_process_closed_at_exit(void)
{
    return __atomic_load_n(&closed_at_exit, __ATOMIC_ACQUIRE);
}

static void close_at_exit(void)
{
    /* the asynchronous requests still deferred go first, as a socket would have carried them before the exit; a vGPU
       whose lock another thread holds is in a request, which carries them (and the exit cannot wait for a lock the
       exiting thread might hold itself) */
    for (int ordinal = 0; ordinal < vgpu_device_count(); ordinal++) {
        struct vgpu_device *device = vgpu_device_at(ordinal);
        if (pthread_mutex_trylock(&device->lock) == 0) {
            vgpu_in_process_flush(device);
            pthread_mutex_unlock(&device->lock);
        }
    }
    __atomic_store_n(&closed_at_exit, 1, __ATOMIC_RELEASE);
    JNIEnv *env = thread_env();
    if (env != NULL) {
        inside_runtime++;
        (*env)->CallStaticVoidMethod(env, serving_class, close_all);
        inside_runtime--;
        said_exception(env, "closing the job's vGPUs at exit");
    }
}

typedef jint (*create_java_vm)(JavaVM **, void **, void *);

/* LibraryDirectCalls.stop and resume, the runtime's migrations' calls into direct.c. */
static jboolean JNICALL stop_direct_calls(JNIEnv *env, jclass unused, jint vgpu, jlong timeout_nanos)
{
    (void)env;
    (void)unused;
    return vgpu_direct_stop((int)vgpu, (long long)timeout_nanos) ? JNI_TRUE : JNI_FALSE;
}

static void JNICALL resume_direct_calls(JNIEnv *env, jclass unused, jint vgpu)
{
    (void)env;
    (void)unused;
    vgpu_direct_resume((int)vgpu);
}

/* The session's direct-call methods and the natives of LibraryDirectCalls; a runtime without them has none. */
static void find_direct_calls(JNIEnv *env, jclass session)
{
    jclass direct = (*env)->FindClass(env, "org/vgpu/runtime/remote/worker/LibraryDirectCalls");
    JNINativeMethod natives[] = {
        {(char *)"stop", (char *)"(IJ)Z", (void *)stop_direct_calls},
        {(char *)"resume", (char *)"(I)V", (void *)resume_direct_calls},
    };
    if (direct == NULL || (*env)->RegisterNatives(env, direct, natives, 2) != JNI_OK) {
        (*env)->ExceptionClear(env);
        return;
    }
    offer_direct = (*env)->GetMethodID(env, session, "offerDirectCalls", "()Z");
    driver_context = (*env)->GetMethodID(env, session, "driverContext", "()J");
    driver_function = (*env)->GetMethodID(env, session, "driverFunction", "(I)J");
    driver_stream = (*env)->GetMethodID(env, session, "driverStream", "(I)J");
    if (offer_direct == NULL || driver_context == NULL || driver_function == NULL || driver_stream == NULL) {
        (*env)->ExceptionClear(env);
        offer_direct = NULL;
    }
}

static void *create_jvm(void *unused)
{
    (void)unused;
    inside_runtime = 1; /* this thread is vgpu's runtime's for its whole life */
    const char *library = getenv(VGPU_ENV_LIBCUDA_JVM);
    const char *class_path = getenv(VGPU_ENV_LIBCUDA_CLASS_PATH);
    if (library == NULL || class_path == NULL) {
        snprintf(jvm_problem, sizeof jvm_problem,
                 "%s=in-process needs %s and %s, which vgpu run sets: run the program under vgpu run",
                 VGPU_ENV_LIBCUDA_SERVING, VGPU_ENV_LIBCUDA_JVM, VGPU_ENV_LIBCUDA_CLASS_PATH);
        return NULL;
    }
    jvm_library = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    create_java_vm create = jvm_library == NULL ? NULL : (create_java_vm)dlsym(jvm_library, "JNI_CreateJavaVM");
    if (create == NULL) {
        snprintf(jvm_problem, sizeof jvm_problem, "%s=%s cannot be loaded: %s", VGPU_ENV_LIBCUDA_JVM, library,
                 dlerror());
        return NULL;
    }
    size_t class_path_bytes = strlen(class_path) + sizeof "-Djava.class.path=";
    char *class_path_option = malloc(class_path_bytes);
    if (class_path_option == NULL) {
        snprintf(jvm_problem, sizeof jvm_problem, "out of memory");
        return NULL;
    }
    snprintf(class_path_option, class_path_bytes, "-Djava.class.path=%s", class_path);
    /* The runtime's native backend must reach the node's driver as this library loaded it: by name it would find this
       library again (CudaDriverFfm). Without a driver, the property stays unset and the native backend says so. */
    char driver_option[64] = "-Dvgpu.cuda.driver-handle.none=true";
    void *driver = vgpu_real_driver();
    if (driver != NULL) {
        snprintf(driver_option, sizeof driver_option, "-Dvgpu.cuda.driver-handle=0x%lx", (unsigned long)(uintptr_t)driver);
    }
    JavaVMOption options[] = {
        {driver_option, NULL},
        {class_path_option, NULL},
        {(char *)"-Xrs", NULL},
        {(char *)"-Dvgpu.libcuda.in-process=true", NULL}, /* the interposer's premain stands aside in this JVM */
        {(char *)"--enable-native-access=ALL-UNNAMED", NULL},
        {(char *)"--sun-misc-unsafe-memory-access=allow", NULL},
        {(char *)"-XX:+UseSerialGC", NULL},
        {(char *)"-Xms16m", NULL}, /* the heap starts small and grows as the program needs: its young part is touched */
        {(char *)"-XX:-UsePerfData", NULL},
    };
    /* then the user's own (VGPU_LIBCUDA_JVM_OPTIONS), which may override vgpu's: a flight recording, a larger heap */
    enum { OWN = sizeof options / sizeof options[0], MOST_USER_OPTIONS = 32 };
    JavaVMOption all[OWN + MOST_USER_OPTIONS];
    memcpy(all, options, sizeof options);
    jint count = OWN;
    const char *user = getenv(VGPU_ENV_LIBCUDA_JVM_OPTIONS);
    char *user_options = user == NULL ? NULL : strdup(user);
    char *rest = NULL;
    for (char *word = user_options == NULL ? NULL : strtok_r(user_options, " ", &rest); word != NULL;
         word = strtok_r(NULL, " ", &rest)) {
        if (count == OWN + MOST_USER_OPTIONS) {
            snprintf(jvm_problem, sizeof jvm_problem, "%s has more than %d options", VGPU_ENV_LIBCUDA_JVM_OPTIONS,
                     (int)MOST_USER_OPTIONS);
            free(user_options);
            free(class_path_option);
            return NULL;
        }
        all[count++] = (JavaVMOption){word, NULL};
    }
    JavaVMInitArgs arguments = {JNI_VERSION_21, count, all, JNI_FALSE};
    JNIEnv *env = NULL;
    /* JAVA_TOOL_OPTIONS is the program's (vgpu run puts its Java agent there, for a Java program the program may
       start), and every JVM a process creates reads it: this one is vgpu's own, so it is created without it (an agent
       jar without Premain-Class, as a staged class path has, would stop it). The program's threads see the variable
       unset for the moment the JVM takes to read its options. */
    char *tool_options = getenv("JAVA_TOOL_OPTIONS") == NULL ? NULL : strdup(getenv("JAVA_TOOL_OPTIONS"));
    if (tool_options != NULL) {
        unsetenv("JAVA_TOOL_OPTIONS");
    }
    jint created = create(&jvm, (void **)&env, &arguments);
    if (tool_options != NULL) {
        setenv("JAVA_TOOL_OPTIONS", tool_options, 1);
        free(tool_options);
    }
    free(class_path_option);
    free(user_options);
    if (created != JNI_OK) {
        jvm = NULL;
        snprintf(jvm_problem, sizeof jvm_problem, "the JVM of %s did not start (JNI_CreateJavaVM answered %d)%s%s",
                 library, (int)created, user == NULL ? "" : "; its options include " VGPU_ENV_LIBCUDA_JVM_OPTIONS "=",
                 user == NULL ? "" : user);
        return NULL;
    }
    jclass found = (*env)->FindClass(env, "org/vgpu/job/InProcessServing");
    jclass session = (*env)->FindClass(env, "org/vgpu/runtime/remote/worker/InProcessWorker$Session");
    if (found == NULL || session == NULL) {
        (*env)->ExceptionClear(env);
        snprintf(jvm_problem, sizeof jvm_problem, "%s=%s has no vgpu runtime of this library's version",
                 VGPU_ENV_LIBCUDA_CLASS_PATH, class_path);
        (*jvm)->DetachCurrentThread(jvm);
        jvm = NULL;
        return NULL;
    }
    serving_class = (jclass)(*env)->NewGlobalRef(env, found);
    open_session = (*env)->GetStaticMethodID(env, found, "openSession",
                                             "()Lorg/vgpu/runtime/remote/worker/InProcessWorker$Session;");
    close_all = (*env)->GetStaticMethodID(env, found, "close", "()V");
    serve_method = (*env)->GetMethodID(env, session, "serve", "(Ljava/nio/ByteBuffer;I)I");
    close_session = (*env)->GetMethodID(env, session, "close", "()V");
    if (open_session == NULL || close_all == NULL || serve_method == NULL || close_session == NULL) {
        (*env)->ExceptionClear(env);
        snprintf(jvm_problem, sizeof jvm_problem, "%s=%s has no vgpu runtime of this library's version",
                 VGPU_ENV_LIBCUDA_CLASS_PATH, class_path);
        (*jvm)->DetachCurrentThread(jvm);
        jvm = NULL;
        return NULL;
    }
    find_direct_calls(env, session);
    (*jvm)->DetachCurrentThread(jvm);
    return NULL;
}

static void start_jvm(void)
{
    pthread_key_create(&attached_thread, detach_thread);
    __atomic_store_n(&vgpu_in_process_started, 1, __ATOMIC_RELEASE);
    pthread_attr_t attributes;
    pthread_t thread;
    pthread_attr_init(&attributes);
    pthread_attr_setstacksize(&attributes, 8u << 20);
    if (pthread_create(&thread, &attributes, create_jvm, NULL) != 0) {
        snprintf(jvm_problem, sizeof jvm_problem, "no thread to start the JVM on");
    } else {
        pthread_join(thread, NULL);
    }
    pthread_attr_destroy(&attributes);
    if (jvm != NULL) {
        /* The node's driver tears itself down at exit by a handler it registers in its cuInit, and exit runs handlers
           in reverse order: initialized before close_at_exit is registered, the driver is still there when the
           vGPUs close. (Left to the native backend's first open, its cuInit came later and its teardown first.) */
        CUresult (*driver_init)(unsigned int) = NULL;
        void *driver = vgpu_real_driver();
        if (driver != NULL) {
            *(void **)&driver_init = dlsym(driver, "cuInit");
        }
        if (driver_init != NULL) {
            driver_init(0);
        }
        atexit(close_at_exit);
    }
}

/* A new direct buffer of bytes over state's memory, replacing the one before, whose deferred requests it keeps. */
static int grow(JNIEnv *env, struct vgpu_in_process *state, size_t bytes)
{
    size_t capacity = state->capacity == 0 ? FIRST_BUFFER_BYTES : state->capacity;
    while (capacity < bytes) {
        capacity *= 2;
    }
    if (capacity > 0x7fffffffu) {
        return -1;
    }
    uint8_t *buffer = malloc(capacity);
    jobject object = buffer == NULL ? NULL : (*env)->NewDirectByteBuffer(env, buffer, (jlong)capacity);
    jobject global = object == NULL ? NULL : (*env)->NewGlobalRef(env, object);
    if (global == NULL) {
        free(buffer);
        (*env)->ExceptionClear(env);
        return -1;
    }
    (*env)->DeleteLocalRef(env, object);
    if (state->deferred > 0) {
        memcpy(buffer, state->buffer, state->deferred);
    }
    if (state->buffer_object != NULL) {
        (*env)->DeleteGlobalRef(env, state->buffer_object);
    }
    free(state->buffer);
    state->buffer = buffer;
    state->buffer_object = global;
    state->capacity = capacity;
    return 0;
}

CUresult vgpu_in_process_open(struct vgpu_device *device)
{
    pthread_once(&jvm_started, start_jvm);
    JNIEnv *env = thread_env();
    if (env == NULL) {
        vgpu_say("vGPU %d: vgpu's runtime cannot start in this process: %s", device->index,
                 jvm_problem[0] != '\0' ? jvm_problem : "this thread cannot be attached to its JVM");
        return CUDA_ERROR_NO_DEVICE;
    }
    struct vgpu_in_process *state = calloc(1, sizeof *state);
    if (state == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    inside_runtime++;
    jobject session = (*env)->CallStaticObjectMethod(env, serving_class, open_session);
    inside_runtime--;
    if (said_exception(env, "opening a vGPU session") || session == NULL || grow(env, state, FIRST_BUFFER_BYTES) != 0) {
        free(state);
        return CUDA_ERROR_NO_DEVICE;
    }
    state->session = (*env)->NewGlobalRef(env, session);
    (*env)->DeleteLocalRef(env, session);
    device->in_process = state;
    return CUDA_SUCCESS;
}

/* Hands the session the frames in buffer's first request_bytes (0: none), the deferred requests first, and takes the
   replies due into the buffer. */
static int serve(JNIEnv *env, struct vgpu_device *device, size_t request_bytes)
{
    struct vgpu_in_process *state = device->in_process;
    atomic_fetch_add_explicit(&serve_calls, 1, memory_order_relaxed);
    inside_runtime++;
    jint replies = (*env)->CallIntMethod(env, state->session, serve_method, state->buffer_object, (jint)request_bytes);
    inside_runtime--;
    state->deferred = 0;
    state->deferred_requests = 0;
    atomic_store_explicit(&device->direct.deferred, 0, memory_order_release);
    if (said_exception(env, "a request") || replies < 0 || (size_t)replies > state->capacity) {
        return -1;
    }
    state->inbox_length = (size_t)replies;
    state->inbox_read = 0;
    return 0;
}

/* Keeps the replies not read yet (a late word of an earlier request), as the socket keeps them, for the reader: the
   buffer is about to take requests. */
static int keep_unread_replies(struct vgpu_in_process *state)
{
    size_t unread = state->inbox_length - state->inbox_read;
    if (unread == 0) {
        return 0;
    }
    size_t kept = state->held_length - state->held_read;
    uint8_t *held = malloc(kept + unread);
    if (held == NULL) {
        return -1;
    }
    if (kept > 0) {
        memcpy(held, state->held + state->held_read, kept);
    }
    memcpy(held + kept, state->buffer + state->inbox_read, unread);
    free(state->held);
    state->held = held;
    state->held_length = kept + unread;
    state->held_read = 0;
    state->inbox_length = state->inbox_read = 0;
    return 0;
}

int vgpu_in_process_write(struct vgpu_device *device, const void *bytes, size_t length, int asynchronous)
{
    struct vgpu_in_process *state = device->in_process;
    JNIEnv *env = thread_env();
    if (env == NULL || state == NULL || keep_unread_replies(state) != 0) {
        return -1;
    }
    atomic_fetch_add_explicit(&requests_written, 1, memory_order_relaxed);
    size_t total = state->deferred + length;
    if (asynchronous && total <= DEFERRED_BYTES && total <= state->capacity &&
        state->deferred_requests < DEFERRED_REQUESTS) {
        memcpy(state->buffer + state->deferred, bytes, length);
        state->deferred = total;
        state->deferred_requests++;
        /* direct calls wait for these: the program's calls reach the GPU in the order it made them */
        atomic_store_explicit(&device->direct.deferred, 1, memory_order_release);
        return 0;
    }
    if (total > state->capacity && grow(env, state, total) != 0) {
        return -1;
    }
    memcpy(state->buffer + state->deferred, bytes, length);
    return serve(env, device, total);
}

unsigned long long vgpu_in_process_requests(unsigned long long *calls)
{
    *calls = atomic_load_explicit(&serve_calls, memory_order_relaxed);
    return atomic_load_explicit(&requests_written, memory_order_relaxed);
}

int vgpu_in_process_flush(struct vgpu_device *device)
{
    struct vgpu_in_process *state = device->in_process;
    if (state == NULL || state->deferred == 0) {
        return 0;
    }
    JNIEnv *env = thread_env();
    if (env == NULL || keep_unread_replies(state) != 0) {
        return -1;
    }
    return serve(env, device, state->deferred);
}

int vgpu_in_process_read(struct vgpu_device *device, void *bytes, size_t length)
{
    struct vgpu_in_process *state = device->in_process;
    JNIEnv *env = thread_env();
    if (env == NULL || state == NULL) {
        return -1;
    }
    uint8_t *at = bytes;
    while (length > 0) {
        const uint8_t *from;
        size_t available;
        size_t *read;
        if (state->held_read < state->held_length) {
            from = state->held + state->held_read;
            available = state->held_length - state->held_read;
            read = &state->held_read;
        } else if (state->inbox_read < state->inbox_length) {
            from = state->buffer + state->inbox_read;
            available = state->inbox_length - state->inbox_read;
            read = &state->inbox_read;
        } else {
            if (serve(env, device, state->deferred) != 0 || state->inbox_length == 0) {
                return -1; /* nothing more is due: the session ended */
            }
            continue;
        }
        size_t taken = available < length ? available : length;
        memcpy(at, from, taken);
        *read += taken;
        at += taken;
        length -= taken;
    }
    return 0;
}

void vgpu_in_process_close(struct vgpu_device *device)
{
    struct vgpu_in_process *state = device->in_process;
    if (state == NULL) {
        return;
    }
    JNIEnv *env = thread_env();
    /* at exit, the runtime closed every session already */
    int session_open = env != NULL && !vgpu_in_process_closed_at_exit();
    if (session_open) {
        vgpu_in_process_flush(device); /* what the program asked before it closed, as the socket would carry it */
    }
    device->in_process = NULL;
    if (session_open) {
        inside_runtime++;
        (*env)->CallVoidMethod(env, state->session, close_session);
        inside_runtime--;
        said_exception(env, "closing a vGPU session");
        (*env)->DeleteGlobalRef(env, state->session);
        (*env)->DeleteGlobalRef(env, state->buffer_object);
    }
    free(state->buffer);
    free(state->held);
    free(state);
}

int vgpu_in_process_offer_direct(struct vgpu_device *device)
{
    struct vgpu_in_process *state = device->in_process;
    JNIEnv *env = thread_env();
    if (offer_direct == NULL) {
        return -1;
    }
    if (env == NULL || state == NULL) {
        return 0;
    }
    inside_runtime++;
    jboolean offered = (*env)->CallBooleanMethod(env, state->session, offer_direct);
    inside_runtime--;
    return !said_exception(env, "offering direct calls") && offered == JNI_TRUE;
}

uint64_t vgpu_in_process_driver_handle(struct vgpu_device *device, enum vgpu_driver_handle which, int id)
{
    struct vgpu_in_process *state = device->in_process;
    JNIEnv *env = thread_env();
    if (env == NULL || state == NULL || offer_direct == NULL) {
        return VGPU_DIRECT_NONE;
    }
    inside_runtime++;
    jlong handle = which == VGPU_DRIVER_CONTEXT    ? (*env)->CallLongMethod(env, state->session, driver_context)
                   : which == VGPU_DRIVER_FUNCTION ? (*env)->CallLongMethod(env, state->session, driver_function, (jint)id)
                                                   : (*env)->CallLongMethod(env, state->session, driver_stream, (jint)id);
    inside_runtime--;
    return said_exception(env, "asking a driver handle") ? VGPU_DIRECT_NONE : (uint64_t)handle;
}
