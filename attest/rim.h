/* SPDX-License-Identifier: Apache-2.0 */
/* NVIDIA RIM service documents: the JSON envelope, the digest, and the KeyInfo chain to the pinned CoRIM root. */
#ifndef ATTEST_RIM_H
#define ATTEST_RIM_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/*
 * What is checked here, before a RIM is stored: the envelope that
 * GET {base}/v1/rim/{id} returns ({"id", "rim" (base64 of the SWID/TCG RIM
 * XML), "sha256" (hex of the decoded XML), "rim_format", "request_id"}),
 * that its id is the one requested, that sha256 matches the decoded
 * document, and that the certificates in the document's XMLDSig KeyInfo
 * chain to the pinned NVIDIA CoRIM signing Root CA, every one of them on
 * that path (a copy the path does not use would be stored unchecked).
 *
 * What is NOT checked here: the XML signature itself (SignedInfo, digests,
 * the ecdsa-sha384 SignatureValue). nvattest verifies it, and the
 * measurements, when it uses the RIM; stapled only refuses to cache what
 * could not have come from NVIDIA's RIM signing hierarchy.
 *
 * Certificate dates are not a reason to refuse: nvattest validates RIM
 * chains with X509_V_FLAG_NO_CHECK_TIME and reports an expired signer as
 * the claim x-nvidia-cert-status "expired", which a relying-party policy
 * may accept. rim_result.signer_expired says what nvattest will report.
 */

#define RIM_ID_MAX_CHARS	256		/* as the dstack proxy */
#define RIM_MAX_JSON_BYTES	(8 * 1024 * 1024) /* NVIDIA's are ~30 KiB */
#define RIM_MAX_CERTS		8		/* KeyInfo certificates kept */
#define RIM_MAX_CERT_BYTES	16384		/* one DER certificate */

/*
 * 1 if id is 1..RIM_ID_MAX_CHARS characters of [A-Za-z0-9_.-] and is not
 * "." or ".." (it names a file {id}.xml in a --rim-store dir), else 0.
 */
int	rim_id_valid(const char *id);
/* The same for `len` bytes that are not NUL-terminated (a URL path segment); a NUL among them is refused. */
int	rim_id_validn(const char *id, size_t len);

/* Trust anchors for RIM chains (nothing else: no pool, no device root). */
struct rim_trust;

struct rim_trust *rim_trust_new(void);
void	rim_trust_free(struct rim_trust *);
/* Add the compiled-in NVIDIA CoRIM signing Root CA. Returns 0 or -1. */
int	rim_trust_add_builtin(struct rim_trust *);
/* Add every certificate in a PEM buffer. Returns the count added, or -1. */
int	rim_trust_add_anchors_pem(struct rim_trust *, const char *pem,
	    size_t len);

/* DER certificates, owned by whoever holds the struct. */
struct rim_certs {
	size_t	 n;
	uint8_t	*der[RIM_MAX_CERTS];
	size_t	 len[RIM_MAX_CERTS];
};

void	rim_certs_free(struct rim_certs *);	/* frees members; NULL ok */

/*
 * Extract the X509Certificate elements of the XMLDSig KeyInfo (any
 * namespace prefix, base64 with any whitespace, &#13;/&#10; references),
 * in document order, DER-decoded. Comments, CDATA and processing
 * instructions are skipped; certificates outside a KeyInfo are ignored.
 * Usable on a bare .xml/.swidtag. Returns 0 with out->n >= 1, or -1 with
 * *why set to a static string (out is then empty).
 */
int	rim_xml_certs(const uint8_t *xml, size_t len, struct rim_certs *out,
	    const char **why);

enum rim_verdict {
	RIM_OK = 0,
	RIM_ERR_BAD_ID,		/* the requested id is not a valid RIM ID */
	RIM_ERR_TOO_BIG,	/* longer than RIM_MAX_JSON_BYTES */
	RIM_ERR_JSON,		/* not an object with string id, rim, sha256 */
	RIM_ERR_ID_MISMATCH,	/* "id" is not the requested id */
	RIM_ERR_BASE64,		/* "rim" is not base64 */
	RIM_ERR_SHA256,		/* "sha256" is not hex or does not match */
	RIM_ERR_NO_CERTS,	/* no KeyInfo X509Certificate in the XML */
	RIM_ERR_CERT,		/* a KeyInfo certificate does not parse, or
				   fails der_cert_check (attest/der.h) */
	RIM_ERR_CHAIN,		/* the chain does not reach a RIM anchor, or a
				   KeyInfo certificate is not on that path */
	RIM_VERDICT_MAX
};
extern const char *const rim_verdict_str[RIM_VERDICT_MAX];

/*
 * What a verification found. Members are owned by the result: release
 * them with rim_result_free (the struct itself is the caller's).
 */
struct rim_result {
	enum rim_verdict	 verdict;
	uint8_t			*xml;		/* the decoded document */
	size_t			 xml_len;
	char			 rim_format[32]; /* as sent, "" if absent */
	/*
	 * The verified chain, leaf (the signer) first and the anchor last.
	 * chain.der[1..n-1] are the CA certificates: add them to the
	 * intermediate pool (ocsp_trust_add_pool_der).
	 */
	struct rim_certs	 chain;
	char			 signer_subject[256];	/* RFC 2253 */
	char			 signer_serial[80];	/* upper-case hex */
	time_t			 signer_not_after;
	int			 signer_expired;	/* notAfter < now */
	char			 detail[256];		/* human-readable */
};

void	rim_result_free(struct rim_result *);

/*
 * Verify a RIM service response for expected_id. Pure: `now` is used only
 * for signer_expired. Returns 0 when the verdict is RIM_OK, else -1 with
 * out->verdict and out->detail set (and nothing else owned).
 */
int	rim_verify(struct rim_trust *, const char *expected_id,
	    const uint8_t *json, size_t len, time_t now, struct rim_result *out);

/*
 * The same checks minus the envelope, for a bare RIM XML document (an
 * {id}.xml of a --rim-store dir). out->xml is a copy of the input.
 */
int	rim_verify_xml(struct rim_trust *, const uint8_t *xml, size_t len,
	    time_t now, struct rim_result *out);

#endif
