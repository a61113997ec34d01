/* SPDX-License-Identifier: Apache-2.0 */
/* What a host needs, from NVIDIA GPU/NVSwitch evidence: the CertIDs nvattest OCSP-checks and the RIM IDs it fetches. */
#ifndef ATTEST_EVIDENCE_H
#define ATTEST_EVIDENCE_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/x509.h>

#include "attest/keyset.h"
#include "attest/ocsp_req.h"

/*
 * Inputs, detected by content:
 *  - a JSON array of evidence objects, as the NVIDIA SDKs serialise them:
 *    {"arch", "nonce", "evidence" (base64 SPDM GET_MEASUREMENTS request +
 *    signed response), "certificate" (base64 of a PEM chain, leaf first)},
 *    newer ones also "version", "driver_version", "vbios_version";
 *  - one such evidence object on its own (an object with "certificate");
 *  - the object `nvattest collect-evidence --format json` prints,
 *    {"result_code", "result_message", "evidences": [ ...the above... ]};
 *  - a chain, leaf first and root last: PEM (LF or CRLF line ends),
 *    concatenated DER certificates, or the base64 of either as text or
 *    as a JSON string (an evidence's "certificate" field on its own).
 * `nvattest attest --format json` output ({"claims", "detached_eat", ...})
 * holds no certificates: it is refused with a message that says so and
 * names what to give instead.
 *
 * Which certificates nvattest OCSP-checks (NVIDIA/attestation-sdk
 * nv_x509.cpp, X509CertChain::generate_ocsp_claims): every
 * certificate of a chain except the root; for device identity chains
 * (GPU and NVSwitch) the leaf (FMC alias) is skipped too. So a device
 * chain of 5 gives 3 CertIDs, a RIM KeyInfo chain of 4 gives 3, the
 * leaf (L4 signer) included. Each CertID hashes the issuer taken from
 * the same chain, as `openssl ocsp -sha1|-sha256|-sha384 -issuer I -cert C`
 * makes it, once per hash algorithm the manifest asks for: NVAT 1.x asks
 * with SHA-1 CertIDs, nvattest 2.0 with SHA-256 by default
 * (--ocsp-cert-id-hash), the Python verifier (nvtrust) with SHA-384, and
 * NVIDIA's responder answers in the hash it was asked. The cache key
 * covers the hash algorithm, so each is an entry of its own.
 *
 * The RIM IDs come from the signed opaque data of the SPDM response
 * (gpu/evidence.cpp get_driver_rim_id/get_vbios_rim_id and
 * switch/evidence.cpp get_vbios_rim_id of NVIDIA/attestation-sdk):
 *   Hopper:    NV_GPU_DRIVER_GH100_<driver version>
 *   Blackwell: NV_GPU_CC_DRIVER_<CHIP_INFO>_<driver version>, GB100 when
 *              the report has no CHIP_INFO field
 *   GPU VBIOS: NV_GPU_VBIOS_<PROJECT>_<PROJECT_SKU>_<CHIP_SKU>_<vbios>,
 *              vbios as nvattest prints it ("96.00.A5.00.01") minus dots
 *   NVSwitch:  NV_SWITCH_BIOS_5612_0002_890_<bios version minus dots>
 *              (LS10: project, SKU and chip SKU are fixed by the SDK)
 * The JSON "driver_version"/"vbios_version" fields are not used: the
 * report's signed values are what nvattest requests.
 *
 * Nothing here verifies a chain to a root or the report's signature:
 * a manifest says what to fetch; everything fetched is verified against
 * the pinned roots when it is stored, and nvattest checks the evidence.
 * Each link is checked (issuer name, key id and signature), so a
 * shuffled or foreign chain fails here instead of asking for CertIDs
 * that no GPU will ever need.
 */

#define EVIDENCE_MAX_FILE_BYTES		(64 * 1024 * 1024)
#define EVIDENCE_MAX_DEVICES		256	/* per file */
/*
 * One evidence object's JSON text: a report of EVIDENCE_MAX_REPORT_BYTES
 * is 1.4 MiB of base64, its chain tens of KiB. A file is read an object
 * at a time, so this bounds what one input's tree costs.
 */
#define EVIDENCE_MAX_OBJECT_BYTES	(4 * 1024 * 1024)
#define EVIDENCE_MAX_CHAIN_CERTS	8
#define EVIDENCE_MAX_CHAIN_CERTS_STR	"8"	/* for messages */
#define EVIDENCE_MAX_REPORT_BYTES	(1024 * 1024)
#define EVIDENCE_SHA1_BYTES		20
#define EVIDENCE_MAX_HASH_BYTES		48	/* SHA-384 */
#define EVIDENCE_MAX_SERIAL_BYTES	32	/* RFC 5280 allows 20 */
#define EVIDENCE_ID_BYTES		257	/* a RIM ID and its NUL */
#define EVIDENCE_NONCE_BYTES		16	/* what NVAT sends */

enum evidence_chain_type {
	EVIDENCE_CHAIN_DEVICE = 0,	/* leaf and root not OCSP-checked */
	EVIDENCE_CHAIN_RIM,		/* only the root not OCSP-checked */
	EVIDENCE_CHAIN_TYPE_MAX
};
extern const char *const evidence_chain_type_str[EVIDENCE_CHAIN_TYPE_MAX];

/* The CertID hash algorithms a client may ask with; one name table. */
enum evidence_hash {
	EVIDENCE_HASH_SHA1 = 0,		/* NVAT 1.x */
	EVIDENCE_HASH_SHA256,		/* nvattest 2.0's default */
	EVIDENCE_HASH_SHA384,		/* the Python verifier (nvtrust) */
	EVIDENCE_HASH_MAX
};
extern const char *const evidence_hash_str[EVIDENCE_HASH_MAX];	/* "sha1" */

/* A set of hash algorithms: bit (1u << enum evidence_hash). */
#define EVIDENCE_HASH_BIT(h)		(1u << (h))
#define EVIDENCE_HASHES_ALL		(EVIDENCE_HASH_BIT(EVIDENCE_HASH_MAX) - 1)
#define EVIDENCE_HASHES_DEFAULT		EVIDENCE_HASHES_ALL

/*
 * A comma-separated list of hash names ("sha1,sha256,sha384"; "sha-256"
 * and upper case are taken too) into a set. Returns 0, or -1 with err set
 * for an empty list, an empty item or an unknown name.
 */
int	evidence_hashes_parse(const char *list, unsigned *set, char *err,
	    size_t errlen);

/*
 * The hash algorithm of a parsed CertID, or -1 for any other. The name
 * of a request's CertIDs' algorithm, for people: an evidence_hash_str
 * name, the OID's OpenSSL short name in lower case ("sha512"), its dotted
 * form, or "mixed" when the CertIDs differ. buf of 32 bytes suffices.
 */
int	evidence_certid_hash(const struct ocsp_certid *);
void	evidence_req_hash_name(const struct ocsp_req *, char *buf,
	    size_t len);

enum evidence_kind {
	EVIDENCE_GPU = 0,	/* an evidence object with a GPU arch */
	EVIDENCE_SWITCH,	/* an evidence object with an NVSwitch arch */
	EVIDENCE_CHAIN,		/* a bare chain: CertIDs, no RIM IDs */
	EVIDENCE_KIND_MAX
};
extern const char *const evidence_kind_str[EVIDENCE_KIND_MAX];

/* One certificate nvattest asks OCSP about, in one hash algorithm. */
struct evidence_certid {
	enum evidence_hash hash;
	size_t		 hash_len;	/* of name_hash and key_hash */
	uint8_t		 name_hash[EVIDENCE_MAX_HASH_BYTES];
	uint8_t		 key_hash[EVIDENCE_MAX_HASH_BYTES];
	uint8_t		 serial[EVIDENCE_MAX_SERIAL_BYTES]; /* INTEGER content */
	size_t		 serial_len;
	uint8_t		 key[OCSP_KEY_BYTES];	/* ocsp_req_key of `req` */
	uint8_t		*req;		/* DER OCSPRequest, NVAT's shape (owned) */
	size_t		 req_len;
	enum evidence_chain_type chain;
	char		 subject[256];	/* of the checked certificate, RFC 2253;
					   "" when restated (evidence_certid_rehash) */
};

/* One device (or bare chain) of an input. */
struct evidence_device {
	enum evidence_kind	 kind;
	char			 arch[16];	/* "HOPPER", "LS10", "" */
	char			 source[32];	/* "evidence[3]", "chain" */
	char			 driver_version[64];	/* "" if none */
	char			 vbios_version[64];	/* "96.00.A5.00.01" */
	char			 driver_rim_id[EVIDENCE_ID_BYTES]; /* "" if none */
	char			 vbios_rim_id[EVIDENCE_ID_BYTES];
	size_t			 ncertids;
	size_t			 certid[EVIDENCE_MAX_CHAIN_CERTS *
				    EVIDENCE_HASH_MAX];	/* into certids */
};

/*
 * The manifest model. Every list is deduplicated: certids by (hash
 * algorithm, name hash, key hash, serial), CA certificates by DER, RIM IDs
 * by string; each is in first-seen order. All memory belongs to the
 * manifest. `hashes` is the set of hash algorithms each certificate's
 * CertIDs are made in, EVIDENCE_HASHES_DEFAULT (all three) from
 * evidence_manifest_new; a change applies to what is added after it.
 */
struct evidence_manifest {
	unsigned		 hashes;
	struct evidence_device	*devices;
	size_t			 ndevices;
	struct evidence_certid	*certids;
	size_t			 ncertids;
	uint8_t			**ca_der;	/* CA certificates seen, DER */
	size_t			*ca_len;
	size_t			 ncas;
	char			(*rim_ids)[EVIDENCE_ID_BYTES];
	size_t			 nrim_ids, caprim;
	/* What each list holds, found in constant time (the dedup above). */
	struct keyset		 certid_set;	/* certids' keys: their index */
	struct keyset		 ca_set;	/* SHA-256 of each CA's DER */
	struct keyset		 rim_set;	/* SHA-256 of each RIM ID */
};

struct evidence_manifest *evidence_manifest_new(void);
void	evidence_manifest_free(struct evidence_manifest *);

/*
 * Add one input file's bytes (evidence JSON or PEM chain, see above).
 * All or nothing: on error the manifest is unchanged and err names the
 * element and what is wrong ("evidence[2].certificate: not base64").
 * Returns the number of devices added, or -1.
 */
int	evidence_manifest_add(struct evidence_manifest *, const uint8_t *buf,
	    size_t len, char *err, size_t errlen);

/*
 * Add a chain of DER certificates, leaf first and root last, of the given
 * type: e.g. a RIM's KeyInfo chain (rim_result.chain). All or nothing.
 */
int	evidence_manifest_add_chain(struct evidence_manifest *,
	    enum evidence_chain_type, const uint8_t *const der[],
	    const size_t len[], size_t n, char *err, size_t errlen);

/* Add a RIM ID (from the cache, say). Returns 0, or -1 if not valid. */
int	evidence_manifest_add_rim_id(struct evidence_manifest *,
	    const char *id);

/*
 * The CertIDs nvattest checks for one chain (leaf first, root last):
 * chain[i] with issuer chain[i + 1] for every non-root i, the leaf
 * skipped for EVIDENCE_CHAIN_DEVICE; in the order nvattest asks, from
 * the root down, each certificate in every hash of `hashes` (a non-empty
 * subset of EVIDENCE_HASHES_ALL) in enum order. The last certificate must
 * be self-signed. *out is a malloc'd array of *nout (release with
 * evidence_certids_free). Returns 0, or -1 with err set.
 */
int	evidence_chain_certids(enum evidence_chain_type, unsigned hashes,
	    const uint8_t *const der[], const size_t len[], size_t n,
	    struct evidence_certid **out, size_t *nout, char *err,
	    size_t errlen);
void	evidence_certids_free(struct evidence_certid *, size_t n);

/*
 * The same certificate's CertID in another hash algorithm: the issuer is
 * the one of `cands` whose subject name and key hash to id's issuerNameHash
 * and issuerKeyHash (id's own algorithm, one of enum evidence_hash), the
 * serial is id's. Fills *out (subject "", chain EVIDENCE_CHAIN_DEVICE;
 * release its req with free). Returns 0; 1 when id's algorithm is not one
 * we know or no candidate is its issuer; -1 with err set when the request
 * cannot be built. `cands` is borrowed.
 */
int	evidence_certid_rehash(const struct ocsp_certid *id,
	    STACK_OF(X509) *const cands[], size_t ncands, enum evidence_hash,
	    struct evidence_certid *out, char *err, size_t errlen);

/*
 * A DER OCSPRequest for one CertID the way NVAT builds it
 * (OCSP_request_add0_id once, OCSP_request_add1_nonce; the CertID in its
 * own hash algorithm): with `nonce`, or EVIDENCE_NONCE_BYTES random bytes
 * when nonce is NULL. Returns malloc'd DER or NULL.
 */
uint8_t	*evidence_ocsp_request(const struct evidence_certid *,
	    const uint8_t *nonce, size_t nonce_len, size_t *outlen);

/*
 * Versions and RIM IDs from a raw SPDM attestation report (the decoded
 * "evidence" field; request, response and signature) of architecture
 * `arch` ("HOPPER", "BLACKWELL", "LS10"). Fills the version and RIM ID
 * members of *out, leaves the rest. Returns 0 or -1 with err set.
 */
int	evidence_report_ids(const char *arch, const uint8_t *report,
	    size_t len, struct evidence_device *out, char *err, size_t errlen);

#endif
