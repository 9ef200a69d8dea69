/* sim: see sim.h. */
#include "config.h"

#include "sim/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/cost.h"
#include "model/gen.h"

enum { EV_ITER, EV_XFER, EV_DELIVER, EV_HOP, EV_NODE_DOWN, EV_NODE_UP };

typedef struct event {
	double t;
	long order; /* ties in time resolve in creation order: deterministic */
	int type, a, b;
	long version;
} event;

typedef struct req {
	double arrival, first, finish;
	int input, output, cls;
	int generated, step; /* tokens emitted; cascade step */
	int preempt, esc;
	int group, replica;
	char done, dropped;
	int *path, plen;              /* hops plans: the fragments it visits, in order */
	int prefix;                   /* shared-prefix group, or -1 */
	int user;                     /* shared-prefix user (a recurring prompt), or -1 */
	char pend_first, pend_finish; /* a token time waits for the next iteration */
} req;

typedef struct seq {
	int req;
	int prompt; /* tokens to prefill here */
	int prefilled;
	int chunk;     /* prefill tokens in the running iteration */
	char decoding; /* decodes in the running iteration */
	/* Its request's generated and output while it runs here (not on
	 * hops plans): iterations count tokens here, and the request's own
	 * generated is brought up to date when it leaves (seq_leave). */
	int gen;
	double kv;     /* tokens it holds in the KV cache */
	long admitted; /* admission order: the latest is preempted first */
	int avail;     /* hops plans: tokens arrived from upstream, not yet run here */
	int out;
	int rank; /* its data-parallel attention rank (EP replicas; else 0) */
} seq;

typedef struct replica {
	hx_replica cost;
	int group, role, id_in_group;
	char id[48];
	double kv_cap, kv_used;
	seq *run;
	int nrun, caprun;
	int *wq; /* waiting requests: a ring buffer (preempted ones go in front) */
	int wq_head, wq_len, wq_cap;
	int busy;
	long version;
	double busy_s;
	double last_dt; /* the running (or last) iteration's time: a token it
			 * computes reaches the client one iteration later */
	int *kv_route;  /* indexes into the plan's kv routes from this replica */
	int nkv_route;
	unsigned char *cached; /* per shared-prefix group: its prompt is in the prefix cache */
	unsigned char *user_cached; /* per shared-prefix user: its whole prompt is */
	/* hops plans: the fragment's stages in COST (padded to the whole
	 * model), its exit (it ends at the last layer) and its hops out */
	int frag_off, frag_n, exit;
	int *hop_route, nhop_route;
	int down; /* its spot nodes that are down (--preempt-spot) */
	int dp;   /* its attention data-parallel ranks (hx_replica_dp) */
	/* An AFD group's replica: its cost model, and what its decodes saw
	 * (tokens, sum of batch * tokens, sum of contexts). */
	int is_afd;
	hx_afd afd;
	double afd_tok, afd_tok_b, afd_tok_ctx;
} replica;

typedef struct xfer {
	int req, to; /* request, destination replica */
	double left; /* bytes */
	double latency_s;
} xfer;

typedef struct link {
	char name[64];
	double bw; /* bytes/s */
	xfer *x;
	int n, cap;
	double last;
	long version;
	int due; /* the request whose transfer the pending event ends */
} link;

typedef struct sim {
	hx_map rep_ids, link_ids; /* replica ids and kv link names to indexes */
	const hx_plan *p;
	const hx_workload *w;
	const hx_trace *t;
	hx_rng rng;
	double now;
	event *heap;
	int nheap, capheap;
	int *idx, capidx; /* start_iteration's list of prompts under way */
	/* start_iteration's per-rank state on an EP replica's attention
	 * ranks: token budget left, sequences, batch */
	double *rank_left;
	int *rank_n, caprank;
	hx_batch *rank_b;
	long order;
	req *reqs;
	replica *reps;
	int nreps;
	int *group_first, *group_rr; /* replicas of group g: group_first[g] .. +nreplicas */
	link *links;
	int nlinks;
	int *kv_link; /* per kv route: its link */
	int hops;     /* the plan routes node to node (pipeline plans) */
	int *hop_to;  /* per hop: its destination replica */
	long admitted, done_count, preemptions, iterations, kv_overflows, time_reversals;
	double req_overhead_s; /* API server and tokenizer before the engine sees a request */
	int *pend;             /* requests whose token times wait for the next iteration */
	int npend, cappend;
	/* Ingress routes by class: the routes a class's requests may take and
	 * their running weight sums (a few classes, rebuilt when evicted). */
	struct ing_pick {
		const char *cls;
		int n, *group;
		double *acc;
	} ing[8];
	int ning, ing_next;
	/* --preempt-spot: per spot node the replicas on it */
	int nspot, **spot_reps, *nspot_reps;
	long spot_preemptions, spot_moved;
} sim;

/* ---- event heap ------------------------------------------------------------ */

static int ev_less(const event *a, const event *b)
{
	return a->t < b->t || (a->t == b->t && a->order < b->order);
}

static void push(sim *s, double t, int type, int a, int b, long version)
{
	int i;

	if (s->nheap == s->capheap) {
		s->capheap = s->capheap ? 2 * s->capheap : 256;
		s->heap = hx_xrealloc(s->heap, (size_t)s->capheap * sizeof(event));
	}
	i = s->nheap++;
	s->heap[i] = (event){t, s->order++, type, a, b, version};
	while (i > 0) {
		int up = (i - 1) / 2;
		if (!ev_less(&s->heap[i], &s->heap[up]))
			break;
		event tmp = s->heap[i];
		s->heap[i] = s->heap[up];
		s->heap[up] = tmp;
		i = up;
	}
}

static event pop(sim *s)
{
	event top = s->heap[0];
	int i = 0;

	s->heap[0] = s->heap[--s->nheap];
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;
		if (l < s->nheap && ev_less(&s->heap[l], &s->heap[m]))
			m = l;
		if (r < s->nheap && ev_less(&s->heap[r], &s->heap[m]))
			m = r;
		if (m == i)
			break;
		event tmp = s->heap[i];
		s->heap[i] = s->heap[m];
		s->heap[m] = tmp;
		i = m;
	}
	return top;
}

/* ---- waiting queues -------------------------------------------------------- */

static void wq_grow(replica *r)
{
	int cap = r->wq_cap ? 2 * r->wq_cap : 64, *q = hx_xmalloc((size_t)cap * sizeof(int));
	for (int i = 0; i < r->wq_len; i++)
		q[i] = r->wq[(r->wq_head + i) % r->wq_cap];
	free(r->wq);
	r->wq = q;
	r->wq_cap = cap;
	r->wq_head = 0;
}

static void wq_push_back(replica *r, int id)
{
	if (r->wq_len == r->wq_cap)
		wq_grow(r);
	r->wq[(r->wq_head + r->wq_len++) % r->wq_cap] = id;
}

static void wq_push_front(replica *r, int id)
{
	if (r->wq_len == r->wq_cap)
		wq_grow(r);
	r->wq_head = (r->wq_head + r->wq_cap - 1) % r->wq_cap;
	r->wq[r->wq_head] = id;
	r->wq_len++;
}

static int wq_pop(replica *r)
{
	int x = r->wq[r->wq_head];
	r->wq_head = (r->wq_head + 1) % r->wq_cap;
	r->wq_len--;
	return x;
}

/* ---- routing --------------------------------------------------------------- */

static const char *class_name(const sim *s, int cls)
{
	return cls >= 0 && cls < s->w->nclasses ? s->w->classes[cls].name : "";
}

/* The model a request at cascade step STEP runs on ("" : any). */
static const char *step_model(const sim *s, int step)
{
	return s->p->ncascade > 0 ? s->p->cascade[step].model : "";
}

/* The ingress routes requests of class CLS may take (those from CLS when
 * any is; else those for all traffic; a request of no known class, from a
 * trace, may take any route when none is for all traffic), each with its
 * group and the running sum of their weights in route order. */
static const struct ing_pick *ing_routes(sim *s, const char *cls)
{
	const hx_plan *p = s->p;
	struct ing_pick *c;
	int specific = 0, open = 0, any;
	double acc = 0;

	for (int i = 0; i < s->ning; i++)
		if (strcmp(s->ing[i].cls, cls) == 0)
			return &s->ing[i];
	if (s->ning < (int)HX_ARRAY_LEN(s->ing)) {
		c = &s->ing[s->ning++];
	} else { /* evict in turn */
		c = &s->ing[s->ing_next++ % (int)HX_ARRAY_LEN(s->ing)];
		free(c->group);
		free(c->acc);
	}
	c->cls = cls;
	c->n = 0;
	c->group = hx_xmalloc(((size_t)p->ningress + 1) * sizeof(int));
	c->acc = hx_xmalloc(((size_t)p->ningress + 1) * sizeof(double));
	for (int i = 0; i < p->ningress; i++) {
		if (p->ingress[i].from[0] && strcmp(p->ingress[i].from, cls) == 0)
			specific = 1;
		open |= !p->ingress[i].from[0];
	}
	any = !specific && !open;
	for (int i = 0; i < p->ningress; i++) {
		const hx_route *rt = &p->ingress[i];
		int g;
		if (!any && (specific ? strcmp(rt->from, cls) != 0 : rt->from[0] != '\0'))
			continue;
		g = hx_plan_group_index(p, rt->to);
		if (g < 0 || rt->weight <= 0 || p->groups[g].nreplicas == 0)
			continue;
		acc += rt->weight;
		c->group[c->n] = g;
		c->acc[c->n++] = acc;
	}
	return c;
}

/* A group for request R: by the ingress weights at the first step, by
 * capacity among the next model's groups after an escalation; -1 if none. */
static int pick_group(sim *s, const req *r)
{
	const hx_plan *p = s->p;
	double total = 0, u;

	if (r->step == 0) {
		/* The plan's own length classes, where it declares them, come
		 * before the workload's named classes. */
		const char *pc = hx_plan_class_of(p, r->input, r->output);
		const struct ing_pick *c = ing_routes(s, pc ? pc : class_name(s, r->cls));
		int lo = 0, hi;
		if (c->n == 0 || c->acc[c->n - 1] <= 0)
			return -1;
		u = hx_rng_uniform(&s->rng) * c->acc[c->n - 1];
		if (!(u < c->acc[c->n - 1]))
			return -1;
		hi = c->n - 1; /* the first route whose running sum passes U */
		while (lo < hi) {
			int mid = (lo + hi) / 2;
			if (u < c->acc[mid])
				hi = mid;
			else
				lo = mid + 1;
		}
		return c->group[lo];
	}
	{
		const char *model = step_model(s, r->step);
		double acc = 0;
		for (int g = 0; g < p->ngroups; g++)
			if (strcmp(p->groups[g].model, model) == 0 &&
			    p->groups[g].role != HX_ROLE_DECODE)
				total += fmax(p->groups[g].capacity_rps, 1e-9) *
					 p->groups[g].nreplicas;
		if (total <= 0)
			return -1;
		u = hx_rng_uniform(&s->rng) * total;
		for (int g = 0; g < p->ngroups; g++) {
			if (strcmp(p->groups[g].model, model) != 0 ||
			    p->groups[g].role == HX_ROLE_DECODE)
				continue;
			acc += fmax(p->groups[g].capacity_rps, 1e-9) * p->groups[g].nreplicas;
			if (u < acc)
				return g;
		}
		return -1;
	}
}

/* ---- replicas -------------------------------------------------------------- */

static void start_iteration(sim *s, int ri);

static void drop(sim *s, int id)
{
	req *r = &s->reqs[id];
	r->dropped = 1;
	r->done = 1;
	s->done_count++;
}

/* Put request ID in replica RI's queue (prefilled: its KV arrives whole). */
static void enqueue(sim *s, int ri, int id)
{
	replica *rp = &s->reps[ri];
	req *r = &s->reqs[id];

	if (r->input + r->output > rp->kv_cap) {
		drop(s, id); /* it can never fit */
		return;
	}
	wq_push_back(rp, id);
	if (!rp->busy)
		start_iteration(s, ri);
}

static void hop_route_req(sim *s, int id);

/* Replica RI of group G (drawn for R) is down with its spot node: a live
 * one of G drawn at random (the router spreads a lost replica's share over
 * the rest), else of another group drawn by the weights (a few tries), else
 * any live replica that serves R's model at its step; -1 when none. */
static int live_replica(sim *s, const req *r, int g)
{
	for (int tries = 0; tries < 8; tries++) {
		int n = s->p->groups[g].nreplicas, first = s->group_first[g], live = 0, k;
		for (int c = first; c < first + n; c++)
			live += !s->reps[c].down;
		if (live > 0) {
			k = (int)(hx_rng_uniform(&s->rng) * live) % live;
			for (int c = first; c < first + n; c++)
				if (!s->reps[c].down && k-- == 0)
					return c;
		}
		if ((g = pick_group(s, r)) < 0)
			break;
	}
	for (int c = 0; c < s->nreps; c++)
		if (!s->reps[c].down &&
		    strcmp(s->p->groups[s->reps[c].group].model, step_model(s, r->step)) == 0)
			return c;
	return -1;
}

static void route(sim *s, int id)
{
	req *r = &s->reqs[id];
	int g, ri;

	if (s->hops) {
		hop_route_req(s, id);
		return;
	}
	g = pick_group(s, r);
	if (g < 0) {
		drop(s, id);
		return;
	}
	/* a replica drawn at random within the group: with the group drawn by
	 * its weight, each replica by the group's weight over its replicas, as
	 * the exported LiteLLM router draws them (simple-shuffle), however
	 * the plan groups identical replicas */
	ri = s->group_first[g] + (int)(hx_rng_uniform(&s->rng) * s->p->groups[g].nreplicas) %
				     s->p->groups[g].nreplicas;
	if (s->reps[ri].down && (ri = live_replica(s, r, g)) < 0) {
		drop(s, id);
		return;
	}
	g = s->reps[ri].group;
	r->group = g;
	r->replica = ri;
	enqueue(s, ri, id);
}

/* Preempt the latest admitted sequence of RP (recompute: back to the front
 * of the queue, its KV freed). */
static void preempt(sim *s, replica *rp)
{
	int v = 0;
	seq *q;

	for (int i = 1; i < rp->nrun; i++)
		if (rp->run[i].admitted > rp->run[v].admitted)
			v = i;
	q = &rp->run[v];
	rp->kv_used -= q->kv;
	s->reqs[q->req].generated = q->gen;
	s->reqs[q->req].preempt++;
	s->preemptions++;
	wq_push_front(rp, q->req);
	rp->run[v] = rp->run[--rp->nrun];
}

/* Tokens of request R's prompt that RP's prefix cache holds: its user's
 * whole prompt once that user's was prefilled there, else its group's
 * shared prompt once a request of the group was (whole blocks, never the
 * last token). */
static int prefix_hit(const sim *s, const replica *rp, const req *r)
{
	if (r->prefix < 0 || !rp->cached)
		return 0;
	return (int)hx_prefix_hit(s->w, r->input, rp->cached[r->prefix],
				  r->user >= 0 && rp->user_cached[r->user]);
}

/* An AFD replica's iteration over batch B: hx_cost_afd's step for its
 * decodes at their mean context.  A prompt recomputed after a preemption
 * (no other prompt reaches a decode group) counts as that many more tokens
 * in the step, at the mean context its attention reads (prefill_attn). */
static double afd_iteration_s(const sim *s, replica *rp, const hx_batch *b)
{
	double n = b->decode_seqs + b->prefill_tokens;
	hx_afd_step st;

	hx_cost_afd(&rp->afd, n, (b->decode_ctx + b->prefill_attn) / n, s->w->serving.mem_util,
		    &st);
	rp->afd_tok += b->decode_seqs;
	rp->afd_tok_b += b->decode_seqs * b->decode_seqs;
	rp->afd_tok_ctx += b->decode_ctx;
	return st.step_s;
}

/* One scheduling pass over RP's sequences under way: the decodes first
 * (a token each), then the prompts' next chunks, into B, with the token
 * budget LEFT and the KV KV_NEED they take.  Returns 1 when one did not
 * fit and the latest admitted sequence was preempted (the caller passes
 * again), else 0. */
/* Does RP place each sequence on one of its data-parallel attention ranks
 * (an EP replica's; an AFD unit's instances pool their budget)? */
static int ranked_replica(const replica *rp)
{
	return rp->dp > 1 && !rp->is_afd;
}

static int schedule_running(sim *s, replica *rp, hx_batch *b, double *left, double *kv_need)
{
	double rank_budget = s->w->serving.token_budget, nd = 0, ctx = 0;
	int ndec = 0, npre = 0, ranked = ranked_replica(rp);

	*b = (hx_batch){0};
	*left = rank_budget * rp->dp;
	*kv_need = 0;
	if (ranked)
		for (int i = 0; i < rp->dp; i++) {
			s->rank_left[i] = rank_budget;
			s->rank_n[i] = 0;
			s->rank_b[i] = (hx_batch){0};
		}
	for (int i = 0, nrun = rp->nrun; i < nrun; i++) {
		seq *q = &rp->run[i];
		q->chunk = 0;
		q->decoding = q->prefilled >= q->prompt;
		if (ranked)
			s->rank_n[q->rank]++;
		if (q->decoding) {
			ndec++;
			*left -= 1;
			*kv_need += 1;
			nd += 1;
			ctx += q->kv;
			if (ranked) {
				s->rank_left[q->rank] -= 1;
				hx_batch_add_decode(&s->rank_b[q->rank], 1, q->kv);
			}
		} else {
			s->idx[npre++] = i;
		}
	}
	b->decode_seqs = nd;
	b->decode_ctx = ctx;
	if (rp->kv_used + ndec > rp->kv_cap && rp->nrun > 1) {
		preempt(s, rp);
		return 1;
	}
	for (int k = 0; k < npre; k++) {
		seq *q = &rp->run[s->idx[k]];
		double room = rp->kv_cap - rp->kv_used - *kv_need;
		int n = (int)fmin(fmin(q->prompt - q->prefilled, *left), rank_budget);
		if (ranked && n > 0)
			n = (int)fmin(n, s->rank_left[q->rank]);
		if (n <= 0 && ranked && *left > 0)
			continue; /* its rank's budget is spent */
		if (n <= 0)
			break; /* the budget is spent */
		if (n > room && rp->nrun > 1) {
			preempt(s, rp);
			return 1;
		}
		n = (int)fmin(n, room);
		if (n <= 0)
			continue;
		q->chunk = n;
		*left -= n;
		*kv_need += n;
		hx_batch_add_prefill(b, 1, n, q->prefilled);
		if (ranked) {
			s->rank_left[q->rank] -= n;
			hx_batch_add_prefill(&s->rank_b[q->rank], 1, n, q->prefilled);
		}
	}
	return 0;
}

/* The rank a new sequence joins on a ranked replica: the one with the
 * most token budget left this step, then the fewest sequences (a
 * balancer that sees the ranks' load, as SGLang's shortest-queue and
 * minimum-tokens DP load balancing do); -1 when none has room. */
static int pick_rank(const sim *s, const replica *rp, int max_seqs)
{
	int best = -1;

	for (int i = 0; i < rp->dp; i++) {
		if (s->rank_left[i] <= 0 || s->rank_n[i] >= max_seqs)
			continue;
		if (best < 0 || s->rank_left[i] > s->rank_left[best] ||
		    (s->rank_left[i] == s->rank_left[best] && s->rank_n[i] < s->rank_n[best]))
			best = i;
	}
	return best;
}

static void start_iteration(sim *s, int ri)
{
	replica *rp = &s->reps[ri];
	/* Each data-parallel attention rank of an EP replica is an engine
	 * with its own token budget and sequences (the cost model's rule);
	 * a prompt's chunk is one rank's. */
	int dp = rp->dp, ranked = ranked_replica(rp), rank = 0;
	double rank_budget = s->w->serving.token_budget;
	double kv_need = 0, left;
	int max_seqs = (int)s->w->serving.max_seqs * dp, preempted = 0;
	hx_batch b = {0};
	hx_iter it;

	if (rp->busy)
		return;
	if (s->capidx < rp->nrun) {
		s->capidx = rp->nrun;
		s->idx = hx_xrealloc(s->idx, (size_t)s->capidx * sizeof(int));
	}
	if (ranked && s->caprank < dp) {
		s->caprank = dp;
		s->rank_left = hx_xrealloc(s->rank_left, (size_t)dp * sizeof(double));
		s->rank_n = hx_xrealloc(s->rank_n, (size_t)dp * sizeof(int));
		s->rank_b = hx_xrealloc(s->rank_b, (size_t)dp * sizeof(hx_batch));
	}
	/* 1. the sequences under way, in vLLM's way: each decode needs one
	 * more token of KV and each prompt under way its next chunk's; when
	 * one does not fit, the latest admitted sequence is preempted and the
	 * pass made again (a lone sequence runs what fits). */
	while (schedule_running(s, rp, &b, &left, &kv_need))
		preempted = 1;
	/* 2. new admissions, while the token budget and the KV cache allow,
	 * unless this step preempted (the engine admits none then). */
	while (!preempted && rp->wq_len > 0 && left > 0 && rp->nrun < max_seqs) {
		int id = rp->wq[rp->wq_head];
		req *r = &s->reqs[id];
		seq q = {
		    .req = id, .gen = r->generated, .admitted = s->admitted, .out = r->output};
		if (ranked) {
			rank = pick_rank(s, rp, (int)s->w->serving.max_seqs);
			if (rank < 0)
				break;
			q.rank = rank;
		}
		if (rp->role == HX_ROLE_DECODE && r->generated > 0 && r->preempt == 0) {
			/* KV arrived from a prefill replica: admit it whole. */
			if (rp->kv_used + kv_need + r->input + 1 > rp->kv_cap)
				break;
			q.prompt = 0;
			q.kv = r->input;
			rp->kv_used += q.kv;
			q.decoding = 1;
			left -= 1;
			kv_need += 1;
			hx_batch_add_decode(&b, 1, q.kv);
			if (ranked) {
				s->rank_left[rank] -= 1;
				hx_batch_add_decode(&s->rank_b[rank], 1, q.kv);
			}
		} else {
			int n, hit = prefix_hit(s, rp, r);
			/* A preempted request recomputes what it had, less what the
			 * prefix cache holds. */
			q.prompt = r->input + (r->generated > 0 ? r->generated - 1 : 0);
			n = (int)fmin(fmin(q.prompt - hit, left), rank_budget);
			if (ranked)
				n = (int)fmin(n, s->rank_left[rank]);
			if (rp->kv_used + kv_need + hit + n > rp->kv_cap)
				break;
			q.prefilled = hit;
			q.kv = hit;
			rp->kv_used += hit;
			q.chunk = n;
			left -= n;
			kv_need += n;
			hx_batch_add_prefill(&b, 1, n, hit);
			if (ranked) {
				s->rank_left[rank] -= n;
				hx_batch_add_prefill(&s->rank_b[rank], 1, n, hit);
			}
		}
		if (ranked)
			s->rank_n[rank]++;
		wq_pop(rp);
		s->admitted++;
		if (rp->nrun == rp->caprun) {
			rp->caprun = rp->caprun ? 2 * rp->caprun : 16;
			rp->run = hx_xrealloc(rp->run, (size_t)rp->caprun * sizeof(seq));
		}
		rp->run[rp->nrun++] = q;
	}
	if (b.prefill_tokens + b.decode_seqs <= 0)
		return; /* nothing runnable: waits for KV or work */
	if (ranked)
		for (int i = 0; i < dp; i++)
			hx_batch_rank_max(&b, &s->rank_b[i]);
	rp->busy = 1;
	rp->version++;
	{
		double dt =
		    rp->is_afd ? afd_iteration_s(s, rp, &b) : hx_cost_cycle(&rp->cost, &b, &it);
		rp->busy_s += dt;
		rp->last_dt = dt;
		push(s, s->now + dt, EV_ITER, ri, 0, rp->version);
	}
	s->iterations++;
}

/* Request ID has its last token (the client's time: see pend()). */
static void finish(sim *s, int id)
{
	req *r = &s->reqs[id];
	const hx_plan *p = s->p;

	if (p->ncascade > r->step + 1 &&
	    hx_rng_uniform(&s->rng) < p->cascade[r->step].escalate) {
		r->step++;
		r->esc++;
		r->generated = 0;
		r->preempt = 0;
		route(s, id);
		return;
	}
	r->finish = s->now;
	r->done = 1;
	s->done_count++;
}

/* The engine streams a token out while it runs the next iteration: the
 * client sees the tokens an iteration computed when the replica's next one
 * ends (at once when none starts).  ID's first token (FIRST) or last
 * (FIN) was computed now; deliver() sets its times once the next iteration
 * is known. */
static void pend(sim *s, int id, int first, int fin)
{
	req *r = &s->reqs[id];

	if (!r->pend_first && !r->pend_finish) {
		if (s->npend == s->cappend) {
			s->cappend = s->cappend ? 2 * s->cappend : 64;
			s->pend = hx_xrealloc(s->pend, (size_t)s->cappend * sizeof(int));
		}
		s->pend[s->npend++] = id;
	}
	r->pend_first |= (char)first;
	r->pend_finish |= (char)fin;
}

static void deliver(sim *s, const replica *rp)
{
	double at = s->now + (rp->busy ? rp->last_dt : 0);

	for (int i = 0; i < s->npend; i++) {
		req *r = &s->reqs[s->pend[i]];
		if (r->pend_first)
			r->first = at;
		if (r->pend_finish)
			r->finish = at;
		r->pend_first = r->pend_finish = 0;
	}
	s->npend = 0;
}

static int pick_kv_route(sim *s, const replica *rp)
{
	double total = 0, acc = 0, u;

	for (int i = 0; i < rp->nkv_route; i++)
		total += fmax(0, s->p->kv[rp->kv_route[i]].weight);
	if (total <= 0)
		return -1;
	u = hx_rng_uniform(&s->rng) * total;
	for (int i = 0; i < rp->nkv_route; i++) {
		acc += fmax(0, s->p->kv[rp->kv_route[i]].weight);
		if (u < acc)
			return rp->kv_route[i];
	}
	return rp->kv_route[rp->nkv_route - 1];
}

static int replica_index(const sim *s, const char *id)
{
	if (s->rep_ids.n)
		return hx_map_get(&s->rep_ids, id);
	for (int i = 0; i < s->nreps; i++)
		if (strcmp(s->reps[i].id, id) == 0)
			return i;
	return -1;
}

/* Processor sharing on a link: bring every transfer's bytes up to now. */
static void link_advance(sim *s, link *l)
{
	double dt = s->now - l->last;
	if (l->n > 0 && dt > 0) {
		double each = l->bw / l->n * dt;
		for (int i = 0; i < l->n; i++)
			l->x[i].left -= each;
	}
	l->last = s->now;
}

static void link_schedule(sim *s, int li)
{
	link *l = &s->links[li];
	double least = INFINITY;

	l->version++;
	for (int i = 0; i < l->n; i++)
		if (l->x[i].left < least) {
			least = l->x[i].left;
			l->due = l->x[i].req;
		}
	if (l->n > 0)
		push(s, s->now + fmax(0, least) / (l->bw / l->n), EV_XFER, li, 0, l->version);
}

static void send_kv(sim *s, const replica *from, int id)
{
	int k = pick_kv_route(s, from), li, to;
	link *l;
	const hx_route *rt;
	req *r = &s->reqs[id];

	if (k < 0 || (to = replica_index(s, s->p->kv[k].to)) < 0) {
		drop(s, id);
		return;
	}
	rt = &s->p->kv[k];
	li = s->kv_link[k];
	l = &s->links[li];
	link_advance(s, l);
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 8;
		l->x = hx_xrealloc(l->x, (size_t)l->cap * sizeof(xfer));
	}
	l->x[l->n++] =
	    (xfer){id, to, hx_kv_bytes_per_token(from->cost.model, from->cost.kvdt) * r->input,
		   rt->latency_ms * 1e-3};
	r->replica = to;
	r->group = s->reps[to].group;
	link_schedule(s, li);
}

static void iteration_done(sim *s, int ri)
{
	replica *rp = &s->reps[ri];
	int i = 0;

	rp->busy = 0;
	while (i < rp->nrun) {
		seq *q = &rp->run[i];
		req *r;
		int emitted = 0;
		if (q->decoding) {
			q->kv += 1;
			rp->kv_used += 1;
			q->gen++;
			emitted = 1;
		} else if (q->chunk > 0) {
			r = &s->reqs[q->req];
			q->prefilled += q->chunk;
			q->kv += q->chunk;
			rp->kv_used += q->chunk;
			if (q->prefilled >= q->prompt) {
				if (rp->cached && r->prefix >= 0)
					rp->cached[r->prefix] = 1;
				if (rp->user_cached && r->user >= 0)
					rp->user_cached[r->user] = 1;
				/* A disaggregated request's first token reaches the
				 * user from the decode side: TTFT includes the KV
				 * transfer. */
				if (q->gen == 0 && rp->role != HX_ROLE_PREFILL)
					pend(s, q->req, 1, 0);
				q->gen++;
				emitted = 1;
			}
		}
		q->chunk = 0;
		q->decoding = 0;
		if (rp->kv_used > rp->kv_cap + 1e-9)
			s->kv_overflows++;
		if (emitted && (q->gen >= q->out ||
				(rp->role == HX_ROLE_PREFILL && q->prefilled >= q->prompt))) {
			int id = q->req;
			r = &s->reqs[id];
			r->generated = q->gen;
			rp->kv_used -= q->kv;
			rp->run[i] = rp->run[--rp->nrun];
			if (r->generated >= r->output) {
				if (r->first < 0 && !r->pend_first) /* a one-token answer */
					pend(s, id, 1, 0);          /* straight from prefill */
				finish(s, id);
				if (r->done)
					pend(s, id, 0, 1);
			} else
				send_kv(s, rp, id);
			continue;
		}
		i++;
	}
	start_iteration(s, ri);
	deliver(s, rp);
}

static void xfer_done(sim *s, int li)
{
	link *l = &s->links[li];
	int i = 0;

	link_advance(s, l);
	while (i < l->n) {
		/* The transfer this event was for ends now, whatever crumbs
		 * floating point left (late in a long run a clock step can
		 * exceed them); others within a nanosecond end with it. */
		if (l->x[i].req == l->due || l->x[i].left <= fmax(1, l->bw * 1e-9)) {
			push(s, s->now + l->x[i].latency_s, EV_DELIVER, l->x[i].req, l->x[i].to,
			     0);
			l->x[i] = l->x[--l->n];
			continue;
		}
		i++;
	}
	link_schedule(s, li);
}

/* ---- pipeline plans: fragments joined by hops ------------------------------- *
 * A request samples its whole path at arrival (the ingress weights, then
 * each fragment's hop weights, as Helix's weighted round-robin does) and is
 * admitted at the path's first fragment once every fragment on it has KV
 * room for its prompt and output (reserved up front: no preemption).  Each
 * fragment runs continuous batching over its layers: decodes first, then
 * prompt chunks within the token budget, but only tokens that have reached
 * it.  What an iteration ran moves on to the next fragment after the hop's
 * latency and transfer (hidden * 2 bytes per token); the last fragment emits
 * the token, and a decode step starts again at the first (the return trip is
 * not charged). */

static seq *frag_seq(replica *rp, int id)
{
	for (int i = 0; i < rp->nrun; i++)
		if (rp->run[i].req == id)
			return &rp->run[i];
	return NULL;
}

static void hop_start_iteration(sim *s, int ri);

static int hop_pick(sim *s, const replica *rp)
{
	double total = 0, acc = 0, u;

	for (int i = 0; i < rp->nhop_route; i++)
		total += fmax(0, s->p->hops[rp->hop_route[i]].weight);
	if (total <= 0)
		return -1;
	u = hx_rng_uniform(&s->rng) * total;
	for (int i = 0; i < rp->nhop_route; i++) {
		acc += fmax(0, s->p->hops[rp->hop_route[i]].weight);
		if (u < acc)
			return rp->hop_route[i];
	}
	return rp->hop_route[rp->nhop_route - 1];
}

static void hop_route_req(sim *s, int id)
{
	req *r = &s->reqs[id];
	int g = pick_group(s, r), ri;

	if (g < 0) {
		drop(s, id);
		return;
	}
	ri = s->group_first[g] + s->group_rr[g]++ % s->p->groups[g].nreplicas;
	r->path = hx_xmalloc((size_t)(s->nreps + 1) * sizeof(int));
	r->plen = 0;
	for (;;) {
		int h;
		if (r->plen >= s->nreps) { /* a cycle: check rejects such plans */
			drop(s, id);
			return;
		}
		r->path[r->plen++] = ri;
		if (s->reps[ri].exit)
			break;
		if ((h = hop_pick(s, &s->reps[ri])) < 0 || s->hop_to[h] < 0) {
			drop(s, id); /* a dead end */
			return;
		}
		ri = s->hop_to[h];
	}
	for (int k = 0; k < r->plen; k++)
		if (r->input + r->output > s->reps[r->path[k]].kv_cap) {
			drop(s, id); /* it can never fit */
			return;
		}
	r->group = s->reps[r->path[r->plen - 1]].group;
	r->replica = r->path[r->plen - 1];
	wq_push_back(&s->reps[r->path[0]], id);
	hop_start_iteration(s, r->path[0]);
}

/* Admit the head of RI's queue when every fragment of its path has room. */
static int hop_admit(sim *s, int ri)
{
	replica *rp = &s->reps[ri];
	int id, need;
	req *r;

	if (rp->wq_len == 0)
		return 0;
	id = rp->wq[rp->wq_head];
	r = &s->reqs[id];
	need = r->input + r->output;
	for (int k = 0; k < r->plen; k++) {
		const replica *f = &s->reps[r->path[k]];
		if (f->kv_used + need > f->kv_cap || f->nrun >= (int)s->w->serving.max_seqs)
			return 0;
	}
	wq_pop(rp);
	for (int k = 0; k < r->plen; k++) {
		replica *f = &s->reps[r->path[k]];
		seq q = {.req = id,
			 .prompt = r->input,
			 .admitted = s->admitted,
			 .avail = k == 0 ? r->input : 0};
		if (f->nrun == f->caprun) {
			f->caprun = f->caprun ? 2 * f->caprun : 16;
			f->run = hx_xrealloc(f->run, (size_t)f->caprun * sizeof(seq));
		}
		f->run[f->nrun++] = q;
		f->kv_used += need;
	}
	s->admitted++;
	return 1;
}

static void hop_start_iteration(sim *s, int ri)
{
	replica *rp = &s->reps[ri];
	double left = s->w->serving.token_budget, dt = 0;
	hx_batch b = {0};
	hx_iter it;

	if (rp->busy)
		return;
	while (hop_admit(s, ri))
		;
	for (int i = 0; i < rp->nrun; i++) {
		seq *q = &rp->run[i];
		q->chunk = 0;
		q->decoding = q->prefilled >= q->prompt && q->avail > 0;
		if (q->decoding) {
			left -= 1;
			hx_batch_add_decode(&b, 1, q->kv);
		}
	}
	for (int i = 0; i < rp->nrun && left > 0; i++) {
		seq *q = &rp->run[i];
		int n;
		if (q->decoding || q->prefilled >= q->prompt || q->avail <= 0)
			continue;
		n = (int)fmin(q->avail, left);
		q->chunk = n;
		left -= n;
		hx_batch_add_prefill(&b, 1, n, q->prefilled);
	}
	if (b.prefill_tokens + b.decode_seqs <= 0)
		return;
	hx_cost_iter(&rp->cost, &b, &it);
	for (int k = 0; k < rp->frag_n; k++)
		dt += it.stage_s[rp->frag_off + k];
	dt += it.overhead_s;
	rp->busy = 1;
	rp->version++;
	rp->busy_s += dt;
	rp->last_dt = dt;
	push(s, s->now + dt, EV_ITER, ri, 0, rp->version);
	s->iterations++;
}

/* Request ID is done: free its seats on every fragment of its path. */
static void hop_finish(sim *s, int id)
{
	req *r = &s->reqs[id];

	for (int k = 0; k < r->plen; k++) {
		replica *f = &s->reps[r->path[k]];
		for (int i = 0; i < f->nrun; i++)
			if (f->run[i].req == id) {
				f->run[i] = f->run[--f->nrun];
				f->kv_used -= r->input + r->output;
				break;
			}
	}
	r->finish = s->now;
	r->done = 1;
	s->done_count++;
	/* freed KV may let queued requests in anywhere */
	for (int i = 0; i < s->nreps; i++)
		if (s->reps[i].wq_len > 0 && !s->reps[i].busy)
			hop_start_iteration(s, i);
}

/* N tokens of request ID leave fragment RI for the next on its path. */
static void hop_send(sim *s, int ri, int id, int n)
{
	req *r = &s->reqs[id];
	double t = s->now;
	int k = 0;

	while (k < r->plen && r->path[k] != ri)
		k++;
	if (k + 1 < r->plen) {
		const replica *rp = &s->reps[ri];
		for (int i = 0; i < rp->nhop_route; i++) {
			const hx_route *h = &s->p->hops[rp->hop_route[i]];
			if (s->hop_to[rp->hop_route[i]] != r->path[k + 1])
				continue;
			t += h->latency_ms * 1e-3 +
			     n * hx_cost_act_bytes_per_token(rp->cost.model) /
				 hx_gbps_bytes_s(h->bw_gbps > 0 ? h->bw_gbps
								: HX_DEFAULT_NIC_GBPS);
			break;
		}
		push(s, t, EV_HOP, id, r->path[k + 1], n);
	} else {
		push(s, t, EV_HOP, id, r->path[0], n);
	}
}

static void hop_arrive(sim *s, int ri, int id, int n)
{
	seq *q = frag_seq(&s->reps[ri], id);

	if (!q)
		return;
	q->avail += n;
	hop_start_iteration(s, ri);
}

static void hop_iteration_done(sim *s, int ri)
{
	replica *rp = &s->reps[ri];
	int i = 0;

	rp->busy = 0;
	while (i < rp->nrun) {
		seq *q = &rp->run[i];
		int id = q->req, n = 0, emit = 0;
		req *r = &s->reqs[id];
		if (q->decoding) {
			n = 1;
			q->kv += 1;
			emit = 1;
		} else if (q->chunk > 0) {
			n = q->chunk;
			q->prefilled += n;
			q->kv += n;
			emit = q->prefilled >= q->prompt;
		}
		q->avail -= n;
		q->chunk = 0;
		q->decoding = 0;
		if (n == 0) {
			i++;
			continue;
		}
		if (!rp->exit) {
			hop_send(s, ri, id, n);
		} else if (emit) {
			if (r->generated == 0)
				pend(s, id, 1, 0);
			r->generated++;
			if (r->generated >= r->output) {
				hop_finish(s, id); /* moves run[]: look at i again */
				pend(s, id, 0, 1);
				continue;
			}
			hop_send(s, ri, id, 1);
		}
		i++;
	}
	hop_start_iteration(s, ri);
	deliver(s, rp);
}

/* ---- spot preemptions (--preempt-spot) ------------------------------------ */

/* Spot node I is taken back: each replica on it stops, its running and
 * waiting requests go back to the router (recomputed where they land: the
 * KV cache went with the node), and it takes none until the node is back. */
static void node_down(sim *s, int i)
{
	int *fresh = hx_xmalloc(((size_t)s->nspot_reps[i] + 1) * sizeof(int)), nf = 0;

	s->spot_preemptions++;
	/* all of the node's replicas stop before any request moves */
	for (int k = 0; k < s->nspot_reps[i]; k++)
		if (s->reps[s->spot_reps[i][k]].down++ == 0)
			fresh[nf++] = s->spot_reps[i][k];
	for (int k = 0; k < nf; k++) {
		replica *rp = &s->reps[fresh[k]];
		int n = 0, *ids = hx_xmalloc(((size_t)rp->nrun + (size_t)rp->wq_len + 1) *
					     sizeof(int));
		for (int j = 0; j < rp->nrun; j++) {
			ids[n++] = rp->run[j].req;
			if (!s->hops)
				s->reqs[rp->run[j].req].generated = rp->run[j].gen;
		}
		while (rp->wq_len > 0)
			ids[n++] = wq_pop(rp);
		rp->nrun = 0;
		rp->kv_used = 0;
		rp->busy = 0;
		rp->version++; /* its running iteration never ends */
		if (rp->cached) {
			memset(rp->cached, 0, (size_t)s->w->prefix_groups);
			memset(rp->user_cached, 0,
			       (size_t)s->w->prefix_groups * (size_t)s->w->prefix_users);
		}
		for (int j = 0; j < n; j++) {
			s->reqs[ids[j]].preempt++;
			s->spot_moved++;
			route(s, ids[j]);
		}
		free(ids);
	}
	free(fresh);
}

static void node_up(sim *s, int i)
{
	for (int k = 0; k < s->nspot_reps[i]; k++)
		s->reps[s->spot_reps[i][k]].down--;
}

/* Spot node NAME's index in S (a new one with RENT's rate when first
 * seen), with replica RI on it. */
static int spot_node(sim *s, hx_map *idx, const char *name, const hx_plan_rent *rent,
		     const hx_plan_rent ***rate, int ri)
{
	int i = hx_map_get(idx, name);

	if (i < 0) {
		i = s->nspot++;
		hx_map_put(idx, name, i);
		s->spot_reps = hx_xrealloc(s->spot_reps, (size_t)s->nspot * sizeof(int *));
		s->nspot_reps = hx_xrealloc(s->nspot_reps, (size_t)s->nspot * sizeof(int));
		*rate = hx_xrealloc((void *)*rate, (size_t)s->nspot * sizeof(**rate));
		s->spot_reps[i] = hx_xmalloc((size_t)s->nreps * sizeof(int));
		s->nspot_reps[i] = 0;
		(*rate)[i] = rent;
	}
	if (s->nspot_reps[i] == 0 || s->spot_reps[i][s->nspot_reps[i] - 1] != ri)
		s->spot_reps[i][s->nspot_reps[i]++] = ri;
	return i;
}

/* The spot nodes of P (those of its rent entries with a preemption rate)
 * and the replicas on each; their preemptions until HORIZON_S drawn with
 * SEED (exponential times at the node's rate, each down for the entry's
 * window) pushed as events.  HX_EINPUT with ERR for plans whose requests
 * move between replicas (pipelines, disaggregation). */
static int setup_spot(sim *s, uint64_t seed, double horizon_s, hx_err *err)
{
	const hx_plan *p = s->p;
	hx_map idx = {0};
	const hx_plan_rent **rate = NULL;
	hx_rng rng;

	if (s->hops || p->nkv > 0)
		return hx_errf(err, HX_EINPUT,
			       "--preempt-spot simulates plans of whole replicas only: "
			       "this plan moves requests between replicas");
	for (int ri = 0; ri < s->nreps; ri++) {
		const hx_plan_group *g = &p->groups[s->reps[ri].group];
		const hx_plan_replica *r = &g->replicas[s->reps[ri].id_in_group];
		for (int st = 0; st < g->nstages; st++)
			for (int k = 0; k < r->ngpus[st]; k++) {
				int o = hx_offer_node(r->gpus[st][k].node, NULL);
				for (int j = 0; o >= 0 && j < p->nrent; j++)
					if (p->rent[j].offer == o &&
					    p->rent[j].preempt_per_hour > 0)
						spot_node(s, &idx, r->gpus[st][k].node,
							  &p->rent[j], &rate, ri);
			}
	}
	/* A generator of its own: the same seed draws the same requests and
	 * routes with and without preemptions until the first one. */
	hx_rng_seed(&rng, seed ^ 0x5b07u);
	for (int i = 0; i < s->nspot; i++) {
		double t = 0, per_s = rate[i]->preempt_per_hour / 3600;
		for (;;) {
			t += -log(hx_rng_uniform(&rng)) / per_s;
			if (t >= horizon_s)
				break;
			push(s, t, EV_NODE_DOWN, i, 0, 0);
			push(s, t + rate[i]->window_s, EV_NODE_UP, i, 0, 0);
			t += rate[i]->window_s;
		}
	}
	hx_map_release(&idx);
	free((void *)rate);
	return 0;
}

/* ---- set-up and report ------------------------------------------------------ */

/* Replica R of AFD group G: its cost model and KV cache (the attention
 * instances'); the plan's placement sizes and memory as check holds them. */
static int setup_afd(sim *s, int g, int r, replica *rp, hx_err *err)
{
	const hx_plan *p = s->p;
	const hx_plan_group *grp = &p->groups[g];
	const hx_plan_replica *pr = &grp->replicas[r];
	hx_afd_step st;
	int rc;

	if (grp->role != HX_ROLE_DECODE)
		return hx_errf(err, HX_EINPUT, "/groups/%d/role: an AFD group decodes, not %s",
			       g, hx_role_name(grp->role));
	if (pr->ngpus[0] != grp->stage[0].tp * grp->afd.attn_n ||
	    pr->nffn != grp->afd.ffn_n * grp->afd.ffn_tp)
		return hx_errf(err, HX_EINPUT,
			       "/groups/%d/replicas/%d: its GPUs are not the AFD group's "
			       "instances times their TP",
			       g, r);
	if ((rc = hx_plan_afd_cost(p, grp, pr, &rp->afd, err)) ||
	    (rc = hx_plan_replica_cost(p, grp, pr, &rp->cost, err)))
		return rc;
	hx_cost_afd_memory(&rp->afd, s->w->serving.mem_util, &st);
	if (st.attn_kv_tokens <= 0 || st.ffn_weights_b + st.ffn_reserve_b > st.ffn_capacity_b)
		return hx_errf(err, HX_EINPUT,
			       "/groups/%d/replicas/%d: the model does not fit its AFD "
			       "instances",
			       g, r);
	rp->is_afd = 1;
	rp->kv_cap = st.attn_kv_tokens;
	return 0;
}

static int setup(sim *s, hx_err *err)
{
	const hx_plan *p = s->p;
	int n = 0, rc;

	/* Pipeline plans: hops between groups that hold part of the model.
	 * Other plans keep their replicas whole (hops, if any, unused). */
	for (int g = 0; g < p->ngroups && p->nhops > 0; g++) {
		const hx_plan_group *grp = &p->groups[g];
		const hx_model *md = hx_plan_model(p, grp->model);
		if (md && grp->nstages > 0 &&
		    (grp->stage[0].first != 0 ||
		     grp->stage[grp->nstages - 1].last != md->a.layers))
			s->hops = 1;
	}
	for (int g = 0; g < p->ngroups; g++)
		n += p->groups[g].nreplicas;
	s->reps = hx_xcalloc((size_t)n, sizeof(replica));
	s->group_first = hx_xcalloc((size_t)p->ngroups + 1, sizeof(int));
	s->group_rr = hx_xcalloc((size_t)p->ngroups + 1, sizeof(int));
	for (int g = 0; g < p->ngroups; g++) {
		const hx_plan_group *grp = &p->groups[g];
		s->group_first[g] = s->nreps;
		for (int r = 0; r < grp->nreplicas; r++) {
			replica *rp = &s->reps[s->nreps];
			hx_memory m;
			/* The cost model reads tp from the stage: a placement of
			 * another size would be simulated as if it had tp GPUs. */
			for (int st = 0; st < grp->nstages && !grp->afd.on; st++)
				if (grp->replicas[r].ngpus[st] != grp->stage[st].tp)
					return hx_errf(
					    err, HX_EINPUT,
					    "/groups/%d/replicas/%d/placement/%d: has "
					    "%d GPUs, the stage's tp is %d",
					    g, r, st, grp->replicas[r].ngpus[st],
					    grp->stage[st].tp);
			if (grp->afd.on) {
				if ((rc = setup_afd(s, g, r, rp, err)))
					return rc;
			} else if (s->hops) {
				const hx_model *md = hx_plan_model(p, grp->model);
				if ((rc = hx_plan_fragment_cost(p, grp, &grp->replicas[r],
								&rp->cost, &rp->frag_off, err)))
					return rc;
				rp->frag_n = grp->nstages;
				rp->exit =
				    md && grp->stage[grp->nstages - 1].last == md->a.layers;
				hx_cost_memory(&rp->cost, s->w->serving.mem_util, &m);
				rp->kv_cap = INFINITY;
				for (int k = rp->frag_off; k < rp->frag_off + rp->frag_n; k++) {
					if (m.st[k].kv_b < 0)
						return hx_errf(
						    err, HX_EINPUT,
						    "/groups/%d/replicas/%d: its layers "
						    "do not fit its GPUs",
						    g, r);
					rp->kv_cap = fmin(rp->kv_cap, m.st[k].kv_tokens);
				}
			} else {
				if ((rc = hx_plan_replica_cost(p, grp, &grp->replicas[r],
							       &rp->cost, err)))
					return rc;
				hx_cost_memory(&rp->cost, s->w->serving.mem_util, &m);
				if (!m.fits)
					return hx_errf(
					    err, HX_EINPUT,
					    "/groups/%d/replicas/%d: the model does not fit its GPUs",
					    g, r);
				rp->kv_cap = m.kv_tokens;
			}
			/* An AFD unit's attention instances are data parallel: each
			 * an engine with its own sequences and token budget. */
			rp->dp = grp->afd.on ? grp->afd.attn_n : hx_replica_dp(&rp->cost);
			rp->group = g;
			rp->role = grp->role;
			rp->id_in_group = r;
			hx_strlcpy(rp->id, grp->replicas[r].id, sizeof(rp->id));
			s->nreps++;
		}
	}
	for (int i = 0; i < s->nreps; i++)
		if (hx_map_put(&s->rep_ids, s->reps[i].id, i) >= 0)
			return hx_errf(err, HX_EINPUT,
				       "/groups/%d/replicas/%d/id: duplicate replica id \"%s\"",
				       s->reps[i].group, s->reps[i].id_in_group, s->reps[i].id);
	/* Ingress routes the simulator would skip must not pass silently: a
	 * route to no group, or a negative weight, is a broken plan. */
	for (int i = 0; i < p->ningress; i++) {
		if (hx_plan_group_index(p, p->ingress[i].to) < 0)
			return hx_errf(err, HX_EINPUT,
				       "/routing/ingress/%d/group: no group \"%s\"", i,
				       p->ingress[i].to);
		if (p->ingress[i].weight < 0)
			return hx_errf(err, HX_EINPUT,
				       "/routing/ingress/%d/weight: is negative (%g)", i,
				       p->ingress[i].weight);
	}
	/* Hops: each replica's routes out and where they go. */
	s->hop_to = hx_xcalloc((size_t)p->nhops + 1, sizeof(int));
	for (int h = 0; h < p->nhops && s->hops; h++) {
		char id[64], *slash;
		int from;
		hx_strlcpy(id, p->hops[h].to, sizeof(id));
		if ((slash = strrchr(id, '/')))
			*slash = '\0';
		s->hop_to[h] = replica_index(s, id);
		hx_strlcpy(id, p->hops[h].from, sizeof(id));
		if ((slash = strrchr(id, '/')))
			*slash = '\0';
		if ((from = replica_index(s, id)) < 0 || s->hop_to[h] < 0)
			return hx_errf(err, HX_EINPUT,
				       "/routing/hops/%d/%s: unknown replica \"%s\"", h,
				       from < 0 ? "from" : "to",
				       from < 0 ? p->hops[h].from : p->hops[h].to);
		replica *rp = &s->reps[from];
		rp->hop_route =
		    hx_xrealloc(rp->hop_route, (size_t)(rp->nhop_route + 1) * sizeof(int));
		rp->hop_route[rp->nhop_route++] = h;
	}
	/* KV routes and the links they share. */
	s->kv_link = hx_xcalloc((size_t)p->nkv + 1, sizeof(int));
	s->links = hx_xcalloc((size_t)p->nkv + 1, sizeof(link));
	for (int k = 0; k < p->nkv; k++) {
		const hx_route *rt = &p->kv[k];
		int from = replica_index(s, rt->from), li = -1;
		if (from < 0)
			return hx_errf(err, HX_EINPUT,
				       "/routing/kv/%d/from: unknown replica \"%s\"", k,
				       rt->from);
		if (replica_index(s, rt->to) < 0)
			return hx_errf(err, HX_EINPUT,
				       "/routing/kv/%d/to: unknown replica \"%s\"", k, rt->to);
		if (rt->link[0])
			li = hx_map_get(&s->link_ids, rt->link);
		if (li < 0) {
			li = s->nlinks++;
			if (rt->link[0])
				hx_map_put(&s->link_ids, rt->link, li);
			hx_strlcpy(s->links[li].name, rt->link, sizeof(s->links[li].name));
			s->links[li].bw = hx_gbps_bytes_s(
			    rt->bw_gbps > 0 ? rt->bw_gbps : HX_DEFAULT_NIC_GBPS);
		}
		s->kv_link[k] = li;
		replica *rp = &s->reps[from];
		rp->kv_route =
		    hx_xrealloc(rp->kv_route, (size_t)(rp->nkv_route + 1) * sizeof(int));
		rp->kv_route[rp->nkv_route++] = k;
	}
	return 0;
}

static void teardown(sim *s)
{
	for (int i = 0; i < s->ning; i++) {
		free(s->ing[i].group);
		free(s->ing[i].acc);
	}
	hx_map_release(&s->rep_ids);
	hx_map_release(&s->link_ids);
	free(s->pend);
	for (int i = 0; i < s->nreps; i++) {
		free(s->reps[i].run);
		free(s->reps[i].cached);
		free(s->reps[i].user_cached);
		free(s->reps[i].wq);
		free(s->reps[i].kv_route);
		free(s->reps[i].hop_route);
	}
	for (int i = 0; i < s->nspot; i++)
		free(s->spot_reps[i]);
	free(s->spot_reps);
	free(s->nspot_reps);
	for (long i = 0; s->reqs && s->t && i < s->t->n; i++)
		free(s->reqs[i].path);
	free(s->hop_to);
	for (int i = 0; i < s->nlinks; i++)
		free(s->links[i].x);
	free(s->links);
	free(s->kv_link);
	free(s->reps);
	free(s->group_first);
	free(s->group_rr);
	free(s->heap);
	free(s->idx);
	free(s->rank_left);
	free(s->rank_n);
	free(s->rank_b);
	free(s->reqs);
}

/* OUT: p50, p90, p95, p99 of V's N values; *MEAN their mean (NAN: none). */
static void percentiles(double *v, long n, double out[4], double *mean)
{
	static const double q[] = {0.5, 0.9, 0.95, 0.99};
	double sum = 0;
	for (long i = 0; i < n; i++)
		sum += v[i];
	*mean = n > 0 ? sum / n : NAN;
	hx_quantiles(v, (size_t)n, q, 4, out);
}

/* Group G's AFD figures into X (hx_sim_group_stats). */
static void report_afd(const sim *s, int g, hx_sim_group_stats *x)
{
	double tok = 0, tok_b = 0, tok_ctx = 0;

	for (int r = 0; r < s->p->groups[g].nreplicas; r++) {
		const replica *rp = &s->reps[s->group_first[g] + r];
		tok += rp->afd_tok;
		tok_b += rp->afd_tok_b;
		tok_ctx += rp->afd_tok_ctx;
	}
	if (tok > 0) {
		x->decode_batch = tok_b / tok;
		x->decode_context = tok_ctx / tok;
	}
}

static void report(sim *s, hx_sim_report *out, int keep)
{
	const hx_workload *w = s->w;
	long n = s->t->n, k = 0, met = 0;
	double *ttft = hx_xmalloc((size_t)n * sizeof(double));
	double *tpot = hx_xmalloc((size_t)n * sizeof(double));
	double *e2e = hx_xmalloc((size_t)n * sizeof(double));
	double gen = 0, tokens = 0, end = 0, first_arrival = n ? s->reqs[0].arrival : 0;
	long ntpot = 0;

	out->requests = n;
	out->groups = hx_xcalloc((size_t)s->p->ngroups + 1, sizeof(hx_sim_group_stats));
	out->ngroups = s->p->ngroups;
	if (keep) {
		out->records = hx_xcalloc((size_t)n + 1, sizeof(hx_sim_record));
		out->nrecords = (int)n;
	}
	for (long i = 0; i < n; i++) {
		req *r = &s->reqs[i];
		int ok = 0;
		if (r->dropped) {
			out->dropped++;
		} else {
			double tt = (r->first - r->arrival) * 1e3;
			double tp =
			    r->output > 1 ? (r->finish - r->first) * 1e3 / (r->output - 1) : 0;
			out->finished++;
			ttft[k] = tt;
			e2e[k] = (r->finish - r->arrival) * 1e3;
			k++;
			if (r->output > 1)
				tpot[ntpot++] = tp;
			ok = tt <= w->slo.ttft_ms && tp <= w->slo.tpot_ms;
			met += ok;
			gen += r->output;
			tokens += r->input + r->output;
			end = fmax(end, r->finish);
			out->groups[r->group].finished++;
		}
		if (keep) {
			hx_sim_record *x = &out->records[i];
			x->arrival_s = r->arrival;
			x->first_token_s = r->dropped ? NAN : r->first;
			x->finish_s = r->dropped ? NAN : r->finish;
			x->input = r->input;
			x->output = r->output;
			x->group = r->dropped ? -1 : r->group;
			x->replica = r->dropped ? -1 : r->replica - s->group_first[r->group];
			x->preemptions = r->preempt;
			x->escalations = r->esc;
			x->dropped = r->dropped;
			x->met_slo = ok;
		}
	}
	percentiles(ttft, k, out->ttft_ms, &out->ttft_mean_ms);
	percentiles(tpot, ntpot, out->tpot_ms, &out->tpot_mean_ms);
	percentiles(e2e, k, out->e2e_ms, &out->e2e_mean_ms);
	/* Everything is measured from the first arrival. */
	end = fmax(end - first_arrival, 0);
	out->makespan_s = end;
	out->offered_s = n ? s->reqs[n - 1].arrival - first_arrival : 0;
	out->offered_rps = out->offered_s > 0 ? (n - 1) / out->offered_s : 0;
	out->slo_attainment = n ? (double)met / n : 0;
	out->goodput_rps = met / fmax(out->offered_s > 0 ? out->offered_s : end, 1e-9);
	out->throughput_tps = end > 0 ? gen / end : 0;
	out->usd_per_hour = s->p->predicted.usd_per_hour;
	out->usd_per_m_tokens =
	    tokens > 0 ? out->usd_per_hour * end / 3600 / (tokens / 1e6) : 0;
	out->preemptions = s->preemptions;
	out->spot_preemptions = s->spot_preemptions;
	out->spot_moved = s->spot_moved;
	out->iterations = s->iterations;
	out->kv_overflows = s->kv_overflows;
	out->time_reversals = s->time_reversals;
	for (int g = 0; g < s->p->ngroups; g++) {
		double busy = 0;
		int nr = s->p->groups[g].nreplicas;
		for (int r = 0; r < nr; r++)
			busy += s->reps[s->group_first[g] + r].busy_s;
		out->groups[g].utilization = end > 0 && nr > 0 ? busy / (nr * end) : 0;
		report_afd(s, g, &out->groups[g]);
	}
	free(ttft);
	free(tpot);
	free(e2e);
}

/* The prefix cache and the request overhead: each request draws its
 * shared-prefix group (its own stream of the seed, so routing draws stay as
 * they were); the overhead is the largest of the plan's GPU profiles'. */
static void setup_prefix(sim *s, uint64_t seed)
{
	const hx_workload *w = s->w;
	hx_rng rng;

	for (int g = 0; g < s->p->ngpus; g++)
		s->req_overhead_s =
		    fmax(s->req_overhead_s, s->p->gpus[g].request_overhead_ms * 1e-3);
	if (w->prefix_groups <= 0 ||
	    (w->prefix_tokens < HX_PREFIX_BLOCK && w->prefix_users <= 0) || s->hops)
		return;
	hx_rng_seed(&rng, seed ^ 0x9e3779b97f4a7c15ULL);
	for (int i = 0; i < s->t->n; i++) {
		req *r = &s->reqs[i];
		if (w->prefix_users > 0) {
			long users = (long)w->prefix_groups * w->prefix_users;
			r->user = (int)((long)(hx_rng_uniform(&rng) * users) % users);
			r->prefix = r->user / w->prefix_users;
		} else {
			r->prefix =
			    (int)(hx_rng_uniform(&rng) * w->prefix_groups) % w->prefix_groups;
		}
	}
	for (int i = 0; i < s->nreps; i++) {
		s->reps[i].cached = hx_xcalloc((size_t)w->prefix_groups, 1);
		if (w->prefix_users > 0)
			s->reps[i].user_cached =
			    hx_xcalloc((size_t)w->prefix_groups * w->prefix_users, 1);
	}
}

int hx_simulate(const hx_plan *p, const hx_workload *w, const hx_trace *t, const hx_sim_opts *o,
		hx_sim_report *out, hx_err *err)
{
	sim s;
	int rc, next = 0;
	long step = t->n / 100 + 1;

	memset(out, 0, sizeof(*out));
	memset(&s, 0, sizeof(s));
	s.p = p;
	s.w = w;
	s.t = t;
	/* A stream of its own for the routing draws: the trace of the same seed
	 * (hx_gen_workload) draws three a request (gap, prompt, output), as a
	 * disaggregated plan's routing does (group, replica, KV route), so on one
	 * stream each request's KV route was its own output's quantile and the
	 * last decode group got the longest answers. */
	hx_rng_seed(&s.rng, (o ? o->seed : 1) ^ 0x243f6a8885a308d3ULL);
	if ((rc = setup(&s, err))) {
		teardown(&s);
		return rc;
	}
	s.reqs = hx_xcalloc((size_t)t->n + 1, sizeof(req));
	for (int i = 0; i < t->n; i++) {
		req *r = &s.reqs[i];
		r->arrival = t->arrival_s[i];
		r->input = t->input[i];
		r->output = t->output[i];
		r->cls = t->cls ? t->cls[i] : -1;
		r->first = -1;
		r->prefix = -1;
		r->user = -1;
	}
	setup_prefix(&s, o ? o->seed : 1);
	if (o && o->preempt_spot && t->n > 0 &&
	    (rc = setup_spot(&s, o->seed, t->arrival_s[t->n - 1], err))) {
		teardown(&s);
		return rc;
	}
	while (next < t->n || s.nheap > 0) {
		/* Arrivals come in trace order, each reaching the engine a fixed
		 * time after the client sent it; events from the heap. */
		double at = next < t->n ? s.reqs[next].arrival + s.req_overhead_s : 0;
		if (next < t->n && (s.nheap == 0 || at <= s.heap[0].t)) {
			if (at < s.now)
				s.time_reversals++;
			s.now = fmax(s.now, at);
			route(&s, next++);
			if (o && o->progress && next % step == 0)
				o->progress((double)next / t->n, o->progress_ctx);
			/* A planner's deadline: stop within a few hundred arrivals. */
			if (o && o->deadline > 0 && next % 256 == 0 && hx_past(o->deadline)) {
				teardown(&s);
				return hx_errf(
				    err, HX_ELIMIT,
				    "the time limit was reached during a simulation");
			}
			continue;
		}
		event e = pop(&s);
		if (e.t < s.now)
			s.time_reversals++;
		s.now = e.t;
		switch (e.type) {
		case EV_ITER:
			if (e.version == s.reps[e.a].version) {
				if (s.hops)
					hop_iteration_done(&s, e.a);
				else
					iteration_done(&s, e.a);
			}
			break;
		case EV_HOP: hop_arrive(&s, e.b, e.a, (int)e.version); break;
		case EV_XFER:
			if (e.version == s.links[e.a].version)
				xfer_done(&s, e.a);
			break;
		case EV_NODE_DOWN: node_down(&s, e.a); break;
		case EV_NODE_UP: node_up(&s, e.a); break;
		case EV_DELIVER:
			if (s.reqs[e.a].first < 0)
				s.reqs[e.a].first = s.now;
			enqueue(&s, e.b, e.a);
			break;
		}
	}
	/* Anything still queued could never be admitted. */
	for (int i = 0; i < t->n; i++)
		if (!s.reqs[i].done)
			drop(&s, i);
	report(&s, out, o && o->keep_records);
	teardown(&s);
	return 0;
}

void hx_sim_report_release(hx_sim_report *r)
{
	free(r->groups);
	free(r->records);
	free(r->curve);
	memset(r, 0, sizeof(*r));
}

/* A request's expected life in P under W, seconds: the predicted (else the
 * SLO's) p99 TTFT and mean output times the predicted (else the SLO's)
 * p99 TPOT.  The capacity runs last HX_CAP_LIVES lives and judge the SLO
 * on requests that arrive after the first HX_CAP_WARMUP_LIVES (the
 * replicas start empty, and a run no longer than a few lives overstates
 * what they carry for long outputs). */
static double request_life_s(const hx_plan *p, const hx_workload *w)
{
	double ttft = p->predicted.ttft_ms_p99 > 0 ? p->predicted.ttft_ms_p99 : w->slo.ttft_ms;
	double tpot = p->predicted.tpot_ms_p99 > 0 ? p->predicted.tpot_ms_p99 : w->slo.tpot_ms;
	return (fmin(ttft, w->slo.ttft_ms) +
		hx_dist_mean(&w->output) * fmin(tpot, w->slo.tpot_ms)) *
	       1e-3;
}

/* The standard error of R's SLO attainment over the COUNTED requests that
 * arrived from WARM on, by batch means: those requests in arrival order
 * cut into HX_CAP_BATCHES runs, the spread of the runs' attainments (0
 * under one request a run). */
static double batch_se(const hx_sim_report *r, double warm, double counted)
{
	double met[HX_CAP_BATCHES] = {0}, n[HX_CAP_BATCHES] = {0}, a[HX_CAP_BATCHES];
	double m = 0, v = 0;
	long j = 0;

	if (counted < HX_CAP_BATCHES)
		return 0;
	for (int i = 0; i < r->nrecords; i++)
		if (r->records[i].arrival_s >= warm) {
			int b = (int)((double)j++ * HX_CAP_BATCHES / counted);
			n[b] += 1;
			met[b] += r->records[i].met_slo;
		}
	for (int b = 0; b < HX_CAP_BATCHES; b++) {
		a[b] = n[b] > 0 ? met[b] / n[b] : 0;
		m += a[b] / HX_CAP_BATCHES;
	}
	for (int b = 0; b < HX_CAP_BATCHES; b++)
		v += (a[b] - m) * (a[b] - m) / (HX_CAP_BATCHES - 1);
	return sqrt(v / HX_CAP_BATCHES);
}

/* Simulate N requests of W at RATE (more where two minutes or HX_CAP_LIVES
 * request lives of arrivals need more, at most HX_CAP_MAX_REQUESTS); *OK
 * says whether the SLO attainment target held on the requests that arrived
 * after the warm-up, and *PT is the rate's point of the curve. */
static int try_rate(const hx_plan *p, const hx_workload *w, int n, const hx_sim_opts *o,
		    double rate, hx_sim_report *r, int *ok, hx_cap_point *pt, hx_err *err)
{
	hx_sim_opts so = {o ? o->seed : 1, 1, NULL, NULL};
	double life = request_life_s(p, w), warm, met = 0, counted = 0;
	double min_s = o && o->cap_min_s > 0 ? o->cap_min_s : 120;
	int lives = o && o->cap_lives > 0 ? o->cap_lives : HX_CAP_LIVES;
	hx_trace t;
	int rc;

	/* A planner's deadline stops a run too, not only the next rate: one
	 * run of an overloaded rate can take seconds (an EP plan's). */
	so.deadline = o ? o->deadline : 0;

	n = (int)fmax(n, fmin(rate * fmax(min_s, lives * life), HX_CAP_MAX_REQUESTS));
	if ((rc = hx_gen_workload(w, rate, n, 0, so.seed, &t, err)))
		return rc;
	rc = hx_simulate(p, w, &t, &so, r, err);
	hx_trace_release(&t);
	if (rc) {
		*ok = 0;
		return rc;
	}
	warm = fmin(HX_CAP_WARMUP_LIVES * life, 0.25 * r->offered_s);
	for (int i = 0; i < r->nrecords; i++)
		if (r->records[i].arrival_s >= warm) {
			counted++;
			met += r->records[i].met_slo;
		}
	*ok = counted > 0 ? met / counted >= w->slo.attainment
			  : r->slo_attainment >= w->slo.attainment;
	pt->attainment_se = batch_se(r, warm, counted);
	pt->rate_rps = rate;
	pt->attainment = counted > 0 ? met / counted : r->slo_attainment;
	pt->requests = r->requests;
	pt->judged = counted > 0 ? (long)counted : r->requests;
	pt->meets = *ok;
	if (!(o && o->keep_records)) {
		free(r->records);
		r->records = NULL;
		r->nrecords = 0;
	}
	return 0;
}

/* The slot of CURVE (NC points so far) for the next rate tried: a new one
 * while there is room (40 doublings and a bisection to 1e-6 are far fewer
 * than HX_CAP_MAX_POINTS), else the last again. */
static hx_cap_point *next_point(hx_cap_point *curve, int *nc)
{
	return &curve[*nc < HX_CAP_MAX_POINTS - 1 ? (*nc)++ : *nc];
}

/* The capacity CAP's standard error from the NC rates of CURVE: the
 * attainment's at CAP over the least-squares slope of attainment against
 * rate within 0.7 to 1.5 times CAP (0 without a falling slope). */
static double capacity_se(const hx_cap_point *curve, int nc, double cap)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0, se = 0, slope;

	for (int i = 0; i < nc; i++) {
		const hx_cap_point *q = &curve[i];
		if (q->rate_rps < 0.7 * cap || q->rate_rps > 1.5 * cap)
			continue;
		n++;
		sx += q->rate_rps;
		sy += q->attainment;
		sxx += q->rate_rps * q->rate_rps;
		sxy += q->rate_rps * q->attainment;
		if (q->rate_rps == cap)
			se = q->attainment_se;
	}
	if (n < 2 || !(cap > 0) || !(n * sxx - sx * sx > 0))
		return 0;
	slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
	return slope < 0 ? se / -slope : 0;
}

/* A planner's deadline in O, passed: HX_ELIMIT. */
static int cap_past(const hx_sim_opts *o, hx_err *err)
{
	if (o && o->deadline > 0 && hx_past(o->deadline))
		return hx_errf(
		    err, HX_ELIMIT,
		    "the time limit was reached during the simulator's capacity search");
	return 0;
}

int hx_sim_capacity(const hx_plan *p, const hx_workload *w, int n, const hx_sim_opts *o,
		    double *rps, hx_sim_report *at, hx_err *err)
{
	double lo = 0,
	       hi = p->predicted.capacity_rps > 0 ? p->predicted.capacity_rps * 1.25 : 1;
	double tol = o && o->cap_tol > 0 ? o->cap_tol : 0.01;
	hx_sim_report best = {0}, r;
	hx_cap_point *curve = hx_xcalloc(HX_CAP_MAX_POINTS, sizeof(hx_cap_point));
	int rc, ok, i, nc = 0;

	/* Double hi while the SLO holds there, then bisect to 1%.  Every rate
	 * uses the same seed: the same requests, only closer together. */
	for (i = 0; i < 40; i++) {
		if ((rc = cap_past(o, err)) ||
		    (rc = try_rate(p, w, n, o, hi, &r, &ok, next_point(curve, &nc), err)))
			goto fail;
		if (!ok) {
			hx_sim_report_release(&r);
			break;
		}
		hx_sim_report_release(&best);
		best = r;
		lo = hi;
		hi *= 2;
	}
	while (hi - lo > tol * hi && hi > 1e-6) {
		double mid = (lo + hi) / 2;
		if ((rc = cap_past(o, err)) ||
		    (rc = try_rate(p, w, n, o, mid, &r, &ok, next_point(curve, &nc), err)))
			goto fail;
		if (ok) {
			hx_sim_report_release(&best);
			best = r;
			lo = mid;
		} else {
			hx_sim_report_release(&r);
			hi = mid;
		}
	}
	*rps = lo;
	if (at) {
		*at = best;
		at->curve = curve;
		at->ncurve = nc;
		at->capacity_se_rps = capacity_se(curve, nc, lo);
	} else {
		hx_sim_report_release(&best);
		free(curve);
	}
	return 0;
fail:
	hx_sim_report_release(&best);
	free(curve);
	return rc;
}
