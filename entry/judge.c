/* SPDX-License-Identifier: Apache-2.0 */
/* A record read back judged again by its kind's admit, for staplectl's verify and import and for the salvage alike. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entry/conf.h"
#include "entry/judge.h"
#include "entry/kind.h"

void
entry_rules_init(struct entry_rules *r, const struct config *cfg)
{
	memset(r, 0, sizeof(*r));
	r->cfg = cfg;
}

const struct config_service *
entry_rules_section(const struct entry_rules *r, enum cache_kind k)
{
	static const struct config_service	none;

	return r->cfg != NULL ? &r->cfg->svc[k] : &none;
}

int
entry_judge(enum cache_kind kind, const struct entry_rules *r,
    const struct entry_record *x, const struct entry_stored *stored,
    time_t now, struct entry_judgement *out)
{
	struct entry_query	q = { x->key, x->klen, x->request,
				    x->request_len, NULL, 0, x->fetched_at, 1 };
	struct entry_answer	a = { x->response, x->response_len, NULL, NULL,
				    x->headers, x->headers_len };

	memset(out, 0, sizeof(*out));
	out->verdict = ENTRY_REFUSE;
	out->pccs.req.kind = INTEL_KIND_MAX;	/* nothing parsed */
	if (kind_name(kind) == NULL) {
		entry_judged(out, ENTRY_REFUSE, "kind %u is not known", kind);
		return 0;
	}
	if (x->klen == 0 || x->klen > CACHE_KEY_MAX_BYTES) {
		entry_judged(out, ENTRY_REFUSE, "key length %zu out of range",
		    x->klen);
		return 0;
	}
	if (kind_table[kind]->admit(r, &q, &a, stored, now, out) !=
	    ENTRY_STORE)
		return 0;
	out->meta.kind = kind;
	return out->ok = 1;
}

enum entry_verdict
entry_judged(struct entry_judgement *out, enum entry_verdict v,
    const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(out->reason, sizeof(out->reason), fmt, ap);
	va_end(ap);
	return out->verdict = v;
}

void
entry_judgement_free(struct entry_judgement *out)
{
	if (out == NULL)
		return;
	entry_rim_admission_free(&out->rim);
}
