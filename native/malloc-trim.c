// malloc_trim(0) for Node (Node-API, no dependencies): gives the pages glibc's allocator holds free,
// in every arena, back to the kernel. Run on the libuv thread pool, so the event loop never waits on
// the arenas' locks. Built by scripts/build-native.mjs; where glibc is absent it reports false.
#include <node_api.h>
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  int released;
} trim_request;

static void trim_execute(napi_env env, void *data) {
  (void)env;
  trim_request *request = data;
#if defined(__GLIBC__)
  request->released = malloc_trim(0);
#else
  request->released = 0;
#endif
}

static void trim_complete(napi_env env, napi_status status, void *data) {
  trim_request *request = data;
  napi_value result;
  napi_get_boolean(env, status == napi_ok && request->released != 0, &result);
  napi_resolve_deferred(env, request->deferred, result);
  napi_delete_async_work(env, request->work);
  free(request);
}

static napi_value trim(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value promise, name;
  trim_request *request = calloc(1, sizeof *request);
  if (request == NULL) {
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  if (napi_create_promise(env, &request->deferred, &promise) != napi_ok ||
      napi_create_string_utf8(env, "malloc_trim", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_async_work(env, NULL, name, trim_execute, trim_complete, request, &request->work) != napi_ok ||
      napi_queue_async_work(env, request->work) != napi_ok) {
    free(request);
    napi_throw_error(env, NULL, "malloc_trim could not be queued");
    return NULL;
  }
  return promise;
}

NAPI_MODULE_INIT() {
  napi_value fn, supported;
  napi_create_function(env, "trim", NAPI_AUTO_LENGTH, trim, NULL, &fn);
  napi_set_named_property(env, exports, "trim", fn);
#if defined(__GLIBC__)
  napi_get_boolean(env, 1, &supported);
#else
  napi_get_boolean(env, 0, &supported);
#endif
  napi_set_named_property(env, exports, "supported", supported);
  return exports;
}
