/* SPDX-License-Identifier: Apache-2.0 */
/* Entries of the kinds judged alone (OCSP) checked on worker threads, verdicts handed back in order (tools/verifiers.h). */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/x509.h>

#include "tools/bundle.h"
#include "tools/staplectl.h"
#include "tools/verifiers.h"

/* One entry in flight. */
struct slot {
	struct bundle_entry	 e;
	struct cache_meta	 stored;
	int			 has_stored;
	struct ctl_check	 c;
	int			 tag;
	int			 done;
};

struct worker {
	struct verifiers	*v;
	struct ctl_trust	 t;
	pthread_t		 thread;
};

/*
 * The ring: the caller puts at tail and takes at head, workers claim at
 * claim; head <= claim <= tail, counted up forever, slot i at i %
 * VERIFIERS_DEPTH. tail and claim change under mu; head only in the
 * caller. A slot's bytes belong to the caller until tail passes it, then
 * to the worker that claims it until it is done.
 */
struct verifiers {
	struct ctl		*ctl;
	struct ctl_trust	*t;		/* the caller's */
	int			 synced;	/* t->pool certificates the workers have */
	struct worker		 w[VERIFIERS_MAX_THREADS];
	int			 nw;		/* workers, each with a trust */
	int			 nrun;		/* of them, threads started */
	struct slot		 slot[VERIFIERS_DEPTH];
	size_t			 head, claim, tail;
	pthread_mutex_t		 mu;
	pthread_cond_t		 work, done;
	int			 stop;
};

int
verifiers_threads(void)
{
	cpu_set_t	set;
	long		n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = CPU_COUNT(&set);
	else
		n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n <= 1)
		return 0;
	return n > VERIFIERS_MAX_THREADS ? VERIFIERS_MAX_THREADS : (int)n;
}

static void *
worker_main(void *arg)
{
	struct worker		*w = arg;
	struct verifiers	*v = w->v;
	struct slot		*s;

	pthread_mutex_lock(&v->mu);
	for (;;) {
		while (!v->stop && v->claim == v->tail)
			pthread_cond_wait(&v->work, &v->mu);
		if (v->stop)
			break;
		s = &v->slot[v->claim++ % VERIFIERS_DEPTH];
		if (s->done)
			continue;	/* a verdict given by the caller */
		pthread_mutex_unlock(&v->mu);
		ctl_check_alone(v->ctl, &w->t, &s->e, v->ctl->now,
		    s->has_stored ? &s->stored : NULL, &s->c);
		pthread_mutex_lock(&v->mu);
		s->done = 1;
		pthread_cond_broadcast(&v->done);
	}
	pthread_mutex_unlock(&v->mu);
	OPENSSL_thread_stop();
	return NULL;
}

int
verifiers_sync(struct verifiers *v)
{
	unsigned char	*der;
	X509		*x;
	int		 i, k, len, rv = 0;

	for (i = v->synced; i < sk_X509_num(v->t->pool); i++) {
		x = sk_X509_value(v->t->pool, i);
		der = NULL;
		if ((len = i2d_X509(x, &der)) <= 0) {
			rv = -1;
			continue;
		}
		for (k = 0; k < v->nw; k++)
			if (ctl_trust_add_pool_der(&v->w[k].t, der,
			    (size_t)len) == -1)
				rv = -1;
		OPENSSL_free(der);
	}
	v->synced = sk_X509_num(v->t->pool);
	return rv;
}

struct verifiers *
verifiers_new(struct ctl *ctl, struct ctl_trust *t, int nthreads)
{
	struct verifiers	*v;
	int			 i;

	if ((v = calloc(1, sizeof(*v))) == NULL) {
		ctl_warnx("out of memory");
		return NULL;
	}
	v->ctl = ctl;
	v->t = t;
	pthread_mutex_init(&v->mu, NULL);
	pthread_cond_init(&v->work, NULL);
	pthread_cond_init(&v->done, NULL);
	if (nthreads > VERIFIERS_MAX_THREADS)
		nthreads = VERIFIERS_MAX_THREADS;
	for (i = 0; i < nthreads; i++) {
		v->w[i].v = v;
		if (ctl_trust_load(ctl, &v->w[i].t, 1) != CTL_OK) {
			ctl_trust_free(&v->w[i].t);
			break;
		}
		v->nw++;
	}
	if (v->nw < nthreads || verifiers_sync(v) == -1) {
		verifiers_free(v);
		return NULL;
	}
	for (; v->nrun < v->nw; v->nrun++)
		if (pthread_create(&v->w[v->nrun].thread, NULL, worker_main,
		    &v->w[v->nrun]) != 0)
			break;
	/* Fewer threads than asked, or none: the caller checks the rest. */
	while (v->nw > v->nrun)
		ctl_trust_free(&v->w[--v->nw].t);
	return v;
}

int
verifiers_full(const struct verifiers *v)
{
	return v->tail - v->head == VERIFIERS_DEPTH;
}

/* Move e into the tail slot and publish it (done: a verdict already there). */
static void
put_slot(struct verifiers *v, struct slot *s, struct bundle_entry *e, int done)
{
	s->e = *e;
	memset(e, 0, sizeof(*e));
	s->done = done;
	pthread_mutex_lock(&v->mu);
	v->tail++;
	if (!done)
		pthread_cond_signal(&v->work);
	pthread_mutex_unlock(&v->mu);
}

int
verifiers_put(struct verifiers *v, struct bundle_entry *e,
    const struct cache_meta *stored)
{
	struct slot	*s = &v->slot[v->tail % VERIFIERS_DEPTH];

	memset(s, 0, sizeof(*s));
	if (stored != NULL) {
		s->stored = *stored;
		s->has_stored = 1;
	}
	if (v->nw == 0) {
		ctl_check_alone(v->ctl, v->t, e, v->ctl->now, stored, &s->c);
		put_slot(v, s, e, 1);
		return 0;
	}
	put_slot(v, s, e, 0);
	return 0;
}

int
verifiers_put_given(struct verifiers *v, struct bundle_entry *e,
    const struct ctl_check *c, int tag)
{
	struct slot	*s = &v->slot[v->tail % VERIFIERS_DEPTH];

	memset(s, 0, sizeof(*s));
	s->tag = tag;
	s->c = *c;
	put_slot(v, s, e, 1);
	return 0;
}

int
verifiers_take(struct verifiers *v, struct bundle_entry *e,
    struct ctl_check *c, int *tag)
{
	struct slot	*s;

	if (v->head == v->tail)
		return 0;
	s = &v->slot[v->head % VERIFIERS_DEPTH];
	pthread_mutex_lock(&v->mu);
	while (!s->done)
		pthread_cond_wait(&v->done, &v->mu);
	pthread_mutex_unlock(&v->mu);
	*e = s->e;
	*c = s->c;
	*tag = s->tag;
	memset(s, 0, sizeof(*s));
	v->head++;
	return 1;
}

void
verifiers_free(struct verifiers *v)
{
	size_t	i;
	int	k;

	if (v == NULL)
		return;
	pthread_mutex_lock(&v->mu);
	v->stop = 1;
	pthread_cond_broadcast(&v->work);
	pthread_mutex_unlock(&v->mu);
	for (k = 0; k < v->nrun; k++)
		pthread_join(v->w[k].thread, NULL);
	for (k = 0; k < v->nw; k++)
		ctl_trust_free(&v->w[k].t);
	for (i = v->head; i != v->tail; i++)
		bundle_entry_clear(&v->slot[i % VERIFIERS_DEPTH].e);
	pthread_cond_destroy(&v->work);
	pthread_cond_destroy(&v->done);
	pthread_mutex_destroy(&v->mu);
	free(v);
}
