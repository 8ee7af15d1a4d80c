/* probe_encode.c - the CPU cost of a repeated task's encoding (cuda_encode_repeat and its
   cuda_put) with no GPU (not a test): a made-up device state in ordinary memory, the ring
   always fetched; then the same with a thread on another core reading the 12 slots at the
   writer's position again and again, as the device's poller does (POLL_PAUSE pauses between
   rounds). On the CI-class CPU (AMD EPYC, 2 cores): 24 ns a task alone, 34-39 with the
   poller (bench/NOTES.md, session 19); the encode phase on the H100's host measured ~113 ns
   (probe_submit_prof, rdtsc included). Then y_k = x_k + one over 1..256 task shapes in turn
   (bench's independent): the CI-class CPU 31 ns for 1, 48-50 for 16, 64 and 256 (the scalar's
   shared log re-records its dropped read each time; the metadata's working set adds nothing). */
#define _GNU_SOURCE
#include "../../gpuos.c"
#ifndef POLL_PAUSE
#define POLL_PAUSE 0
#endif
#include <time.h>
static double now_ns(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static struct gpuos__cuda cu;
#include <pthread.h>
static volatile int stop_poll;
/* a "device" poller on another core: reads the 12 slots from the writer's position on, as the
   fetcher's poll does, again and again */
static void *poller(void *arg){ struct gpuos__cuda *c=(struct gpuos__cuda*)arg; uint64_t acc=0;
  while(!stop_poll){ uint64_t p=__atomic_load_n(&c->pos[0],__ATOMIC_RELAXED); int k;
    for(k=0;k<12;k++){ const volatile uint64_t *w=c->ring[0][(p+k)&(c->P.ring_slots-1)].w; acc+=w[0]; }
    for(k=0;k<POLL_PAUSE;k++) __builtin_ia32_pause(); }
  return (void*)(uintptr_t)acc; }
static gpuos__pk_ctl ctl;
int main(void){
  struct gpuos__cuda *c=&cu; static gpuos_context ctx; static cuda__log lx, ls; gpuos__job job; cuda__memo *m; cuda__access a;
  long N=20000000, i; double t0,t1; int nt;
  c->ctl=&ctl; c->P.ring_slots=CUDA__RING_SLOTS; for(c->P.ring_log2=0;(1ull<<c->P.ring_log2)<CUDA__RING_SLOTS;c->P.ring_log2++){}
  c->ring[0]=(gpuos__qslot*)aligned_alloc(64,CUDA__RING_SLOTS*sizeof(gpuos__qslot)); memset(c->ring[0],0,CUDA__RING_SLOTS*sizeof(gpuos__qslot));
  c->plans=(cuda__plan_entry*)calloc(CUDA__PLAN_CAP,sizeof(cuda__plan_entry)); c->memo=(cuda__memo*)calloc(GPUOS__TCACHE,sizeof(cuda__memo)); c->n_memo=GPUOS__TCACHE;
  c->running=1; c->launches=1; c->dseq[0]=1;
  m=&c->memo[0]; m->rep_key=&lx; m->rep_ver=1; m->launch=1; m->dseq=1; m->d.kind=GPUOS__SLOT_TASK|(5u<<8); m->d.plan_id=7; m->plan_key=42;
  c->plans[7].used=1; c->plans[7].key=42; c->plans[7].epoch=5;
  memset(&a,0,sizeof a); a.dseq=1; a.lo=4096; a.hi=4096+16384; a.write=1; a.tile=1024; a.sig=9; cuda_log_record(c,&lx,&a);
  a.lo=65536; a.hi=65540; a.write=0; a.sig=0; cuda_log_record(c,&ls,&a);
  m->n_acc=2; m->lg[0]=&lx; m->lg[1]=&ls; m->lo[0]=4096; m->hi[0]=4096+16384; m->write[0]=1; m->lo[1]=65536; m->hi[1]=65540; m->write[1]=0;
  m->ver[0]=lx.ver; m->ver[1]=ls.wver;
  memset(&job,0,sizeof job);
  for(nt=0;nt<4;nt++){
    pthread_t th; if(nt>=2){ stop_poll=0; pthread_create(&th,NULL,poller,c); }
    t0=now_ns();
    for(i=0;i<N;i++){
      if(cuda_encode_repeat(&ctx,c,&job,m)!=GPUOS_OK){printf("refused at %ld\n",i);return 1;}
      if((i&15)==0){ ctl.fetched=c->pos[0]; c->fetched_seen[0]=c->pos[0]; ctl.retired=c->dseq[0]-1; }
    }
    t1=now_ns();
    if(nt>=2){ stop_poll=1; pthread_join(th,NULL); }
    printf("cuda_encode_repeat + cuda_put%s: %.1f ns a task (%ld tasks)\n",nt>=2?", a poller on another core":"",(t1-t0)/N,N);
  }
  /* as bench's independent: y_k = x_k + one over T task shapes in turn (T memos, 2 T logs of
     their own and the scalar's log shared by all), to see what the metadata's working set costs */
  { static const int TS[]={1,16,64,256};
    static cuda__log ly[256], lxr[256], lone; int ti;
    for(ti=0;ti<4;ti++){ const int T=TS[ti]; int k; long NN=N/2;
      memset(ly,0,sizeof ly); memset(lxr,0,sizeof lxr); memset(&lone,0,sizeof lone);
      c->dseq[0]=c->dseq[0]+64; ctl.retired=c->dseq[0]-1; c->retired_seen[0]=c->dseq[0]-1;
      for(k=0;k<T;k++){ cuda__memo *mk=&c->memo[k]; const uint64_t dq=c->dseq[0]++;
        memset(mk,0,sizeof *mk); mk->rep_key=&ly[k]; mk->rep_ver=1; mk->launch=1; mk->dseq=dq;
        mk->d.kind=GPUOS__SLOT_TASK|(5u<<8); mk->d.plan_id=(uint32_t)(100+k); mk->plan_key=1000+k;
        c->plans[100+k].used=1; c->plans[100+k].key=1000+k; c->plans[100+k].epoch=5;
        memset(&a,0,sizeof a); a.dseq=dq; a.lo=(uint64_t)(1+k)<<20; a.hi=a.lo+16384; a.write=1; a.tile=1024; a.sig=9; cuda_log_record(c,&ly[k],&a);
        mk->lg[0]=&ly[k]; mk->lo[0]=a.lo; mk->hi[0]=a.hi; mk->write[0]=1;
        a.lo=(uint64_t)(1+k)<<30; a.hi=a.lo+16384; a.write=0; cuda_log_record(c,&lxr[k],&a);
        mk->lg[1]=&lxr[k]; mk->lo[1]=a.lo; mk->hi[1]=a.hi; mk->write[1]=0;
        a.lo=65536; a.hi=65540; a.sig=0; cuda_log_record(c,&lone,&a);
        mk->lg[2]=&lone; mk->lo[2]=65536; mk->hi[2]=65540; mk->write[2]=0; mk->n_acc=3; }
      for(k=0;k<T;k++){ cuda__memo *mk=&c->memo[k]; mk->ver[0]=ly[k].ver; mk->ver[1]=lxr[k].wver; mk->ver[2]=lone.wver; }
      t0=now_ns();
      for(i=0;i<NN;i++){
        if(cuda_encode_repeat(&ctx,c,&job,&c->memo[i%T])!=GPUOS_OK){printf("refused at %ld (T %d)\n",i,T);return 1;}
        if((i&15)==0){ ctl.fetched=c->pos[0]; c->fetched_seen[0]=c->pos[0]; ctl.retired=c->dseq[0]-1; }
      }
      t1=now_ns();
      printf("y_k = x_k + one over %3d task shapes in turn: %.1f ns a task (%ld tasks)\n",T,(t1-t0)/NN,NN); } }
  return 0; }
