/* probe_submit.c - where a submission's time goes on this machine (not a test): validate +
   plan + queue with the executor paused, the encoding of those jobs on unpause, the full
   path, and a chain on one tensor (submit only, and until done). Device 0. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <stdio.h>
#include <time.h>
#include <sys/resource.h>
#include "gpuos.h"
/* user and system CPU seconds of the process, context switches, page faults since the last call */
static void ru(const char *what){static struct rusage a;struct rusage b;getrusage(RUSAGE_SELF,&b);
  if(what) printf("  %s: user %.3f s, sys %.3f s, voluntary switches %ld, involuntary %ld, minor faults %ld\n",what,
    (b.ru_utime.tv_sec-a.ru_utime.tv_sec)+(b.ru_utime.tv_usec-a.ru_utime.tv_usec)/1e6,
    (b.ru_stime.tv_sec-a.ru_stime.tv_sec)+(b.ru_stime.tv_usec-a.ru_stime.tv_usec)/1e6,
    b.ru_nvcsw-a.ru_nvcsw,b.ru_nivcsw-a.ru_nivcsw,b.ru_minflt-a.ru_minflt);
  a=b;}
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
#ifdef GPUOS__PROF_HOST /* built with gpuos.c as a diagnostic build: cycles per phase (gpuos__prof_host) */
#include <string.h>
#include <x86intrin.h>
extern uint64_t gpuos__prof_host[];
static void ph(const char *what){
  static const char *nm[]={"submit (repeat path, all)","  lock","  repeat: lookup, job copy","  queue insert","  encode (pump)",
    "    tiling+operands","    dependencies","    plan id","    ring room+put","    log record","  signal+unlock"};
  double c0=now(); uint64_t r0=__rdtsc(); while(now()-c0<20000){} double ghz=(double)(__rdtsc()-r0)/((now()-c0)*1e3);
  uint64_t n=gpuos__prof_host[11]; int i; printf("  %s: %llu submissions, TSC %.2f GHz, ns per submission:\n",what,(unsigned long long)n,ghz);
  for(i=0;i<11;i++) printf("    %-28s %7.1f\n",nm[i],n?gpuos__prof_host[i]/ghz/(double)n:0.0);
  memset(gpuos__prof_host,0,12*sizeof(uint64_t));}
#else
static void ph(const char *what){(void)what;}
#endif
/* T threads, each y_k = x_k + 1 over its own 64 tensors (as make bench's independent) */
#include <pthread.h>
typedef struct { gpuos_context *ctx; gpuos_tensor *x[64], *y[64], *one; int n; } mt_arg;
static int mt_batch; /* 0: gpuos_add one at a time; else gpuos_submit_many of mt_batch tasks */
static void *mt_main(void *p){ mt_arg *a=(mt_arg*)p; int i,k;
  if(!mt_batch){ for(i=0;i<a->n;i++) gpuos_add(a->ctx,a->y[i&63],a->x[i&63],a->one); return NULL; }
  { gpuos_task t[64]; for(k=0;k<64;k++){ gpuos_task e=GPUOS_TASK_INIT; e.op=GPUOS_OP_ADD; e.out=a->y[k]; e.in[0]=a->x[k]; e.in[1]=a->one; t[k]=e; }
    for(i=0;i<a->n;i+=mt_batch) gpuos_submit_many(a->ctx,t,mt_batch,NULL,NULL); }
  return NULL; }
static void mt(gpuos_context *ctx, gpuos_tensor *one, int T, int N){
  static mt_arg a[8]; pthread_t th[8]; int t,i; int64_t n=4096; double t0,t1; char what[64];
  for(t=0;t<T;t++){ a[t].ctx=ctx; a[t].one=one; a[t].n=N/T; for(i=0;i<64;i++){ gpuos_tensor_new(ctx,GPUOS_F32,1,&n,&a[t].x[i]); gpuos_tensor_new(ctx,GPUOS_F32,1,&n,&a[t].y[i]); } }
  for(t=0;t<T;t++) for(i=0;i<2000;i++) gpuos_add(ctx,a[t].y[i&63],a[t].x[i&63],one);
  gpuos_wait(ctx,60000);
  ph(NULL); t0=now(); for(t=0;t<T;t++) pthread_create(&th[t],NULL,mt_main,&a[t]); for(t=0;t<T;t++) pthread_join(th[t],NULL); t1=now();
  gpuos_wait(ctx,60000);
  snprintf(what,sizeof what,"%d threads",T); ph(what);
  printf("%d threads, y_k = x_k + 1 (64 tensors each)%s: %.3f us/op (%.2f M ops/s)\n",T,mt_batch?", gpuos_submit_many of 64":"",(t1-t0)/N,N/(t1-t0));
  for(t=0;t<T;t++) for(i=0;i<64;i++){ gpuos_tensor_release(a[t].x[i]); gpuos_tensor_release(a[t].y[i]); } }
int main(void){
  gpuos_config cfg = GPUOS_CONFIG_INIT; gpuos_context *ctx; gpuos_tensor *x[256],*one;
  int64_t n=4096; int i, N=200000; double t0,t1;
  cfg.device=0; cfg.queue_capacity=1u<<18; cfg.submit_timeout_ms=60000; cfg.wait_timeout_ms=60000;
  if (gpuos_create(&cfg,&ctx)) { printf("%s\n", gpuos_last_error(NULL)); return 1; }
  for(i=0;i<256;i++) gpuos_tensor_new(ctx,GPUOS_F32,1,&n,&x[i]);
  gpuos_tensor_scalar(ctx,GPUOS_F32,1.0,&one);
  for(i=0;i<20000;i++) gpuos_add(ctx,x[i&255],x[i&255],one);   /* warm: plans cached */
  gpuos_wait(ctx,60000);
  gpuos_debug_pause(ctx,1);
  t0=now(); for(i=0;i<N;i++) gpuos_add(ctx,x[i&255],x[i&255],one); t1=now();
  printf("validate+plan+queue (paused, not encoded): %.3f us/op\n",(t1-t0)/N);
  t0=now(); gpuos_debug_pause(ctx,0); t1=now();
  printf("encode the %d queued tasks on unpause:   %.3f us/op\n", N, (t1-t0)/N);
  gpuos_wait(ctx,60000);
  ph(NULL); ru(NULL); t0=now(); for(i=0;i<N;i++) gpuos_add(ctx,x[i&255],x[i&255],one); t1=now(); ru("full path, submit loop"); ph("256 tensors"); gpuos_wait(ctx,60000);
  printf("full submit path (validate..encode, ring):   %.3f us/op; +wait %.3f us/op\n",(t1-t0)/N,(now()-t0)/N);
  { gpuos_tensor *y[256]; for(i=0;i<256;i++) gpuos_tensor_new(ctx,GPUOS_F32,1,&n,&y[i]);
    for(i=0;i<20000;i++) gpuos_add(ctx,y[i&255],x[i&255],one);
    gpuos_wait(ctx,60000);
    ph(NULL); ru(NULL); t0=now(); for(i=0;i<N;i++) gpuos_add(ctx,y[i&255],x[i&255],one); t1=now(); ru("independent (y_k = x_k + 1), submit loop"); ph("independent"); gpuos_wait(ctx,60000);
    printf("independent (as make bench), submit only:    %.3f us/op; +wait %.3f us/op\n",(t1-t0)/N,(now()-t0)/N);
    for(i=0;i<256;i++) gpuos_tensor_release(y[i]); }
  ph(NULL); ru(NULL); t0=now(); for(i=0;i<N;i++) gpuos_add(ctx,x[0],x[0],one); t1=now(); ru("chain, submit loop"); ph("chain"); gpuos_wait(ctx,60000);
  printf("same tensor (chain), submit only:            %.3f us/op; +wait %.3f us/op\n",(t1-t0)/N,(now()-t0)/N);
  { int T; for(T=1;T<=8;T*=2) mt(ctx,one,T,N); mt_batch=64; for(T=1;T<=8;T*=2) mt(ctx,one,T,N); }
  gpuos_destroy(ctx); return 0; }
