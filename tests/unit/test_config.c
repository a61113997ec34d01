/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for entry/conf*.c: defaults, the JSON file, positions, setters. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include <cmocka.h>

#include "entry/conf.h"

#define NAME	"stapled.json"

static char	err[512];

/* Defaults, then the buffer; the result of config_load_buffer. */
static int
load(struct config *cfg, const char *json)
{
	config_defaults(cfg);
	err[0] = '\0';
	return config_load_buffer(cfg, NAME, json, strlen(json), err,
	    sizeof(err));
}

/* The buffer must fail with exactly this message, and free cleanly. */
static void
load_fails(const char *json, const char *want)
{
	struct config	cfg;

	assert_int_equal(load(&cfg, json), -1);
	assert_string_equal(err, want);
	config_free(&cfg);
}

static void
test_defaults(void **state)
{
	struct config	cfg;

	(void)state;
	config_defaults(&cfg);
	assert_int_equal(cfg.nlisten, 1);
	assert_string_equal(cfg.listen[0], "127.0.0.1:8090");
	assert_string_equal(cfg.cache_dir, "/var/lib/stapled");
	assert_int_equal(cfg.map_size, (size_t)1024 * 1024 * 1024);
	assert_int_equal(cfg.log_level, 0);
	assert_int_equal(cfg.max_connections, 0);
	assert_int_equal(cfg.admin_max_connections, 32);
	assert_int_equal(cfg.send_buffer_kb, 256);
	assert_int_equal(cfg.header_timeout_s, 10);
	assert_int_equal(cfg.body_timeout_s, 10);
	assert_int_equal(cfg.keepalive_timeout_s, 60);
	assert_int_equal(cfg.lookup_threads, 0);
	assert_int_equal(cfg.lookup_offload, CONFIG_OFFLOAD_DISK);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].nupstreams, 1);
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[0].url,
	    "https://ocsp.ndis.nvidia.com");
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[0].name, "ocsp.ndis.nvidia.com");
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[0].verify_nonce, 1);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].nanchors, 0);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].nintermediates, 0);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].npaths, 0);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].mode, CONFIG_MODE_CACHE_FIRST);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].hedge_ms, 500);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].connect_timeout_ms, 2000);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].timeout_ms, 10000);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].client_budget_ms, 5000);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].skew_s, 60);
	assert_true(cfg.svc[CACHE_KIND_OCSP].refresh.fraction == 0.5);
	assert_true(cfg.svc[CACHE_KIND_OCSP].refresh.jitter == 0.1);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].refresh.min_interval_s, 10);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].refresh.max_interval_s, 43200);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].idle_expire_s, 2592000);
	assert_true(cfg.svc[CACHE_KIND_OCSP].rate_limit_per_s == 20);
	assert_string_equal(config_mode_str[CONFIG_MODE_CACHE_FIRST], "cache_first");
	assert_string_equal(config_mode_str[CONFIG_MODE_UPSTREAM_FIRST],
	    "upstream_first");
	assert_int_equal(config_validate(&cfg, err, sizeof(err)), 0);
	config_free(&cfg);
	assert_null(cfg.listen);
	assert_null(cfg.cache_dir);
	assert_null(cfg.svc[CACHE_KIND_OCSP].upstreams);
	config_free(&cfg);	/* twice is harmless: it zeroed the struct */
	config_free(NULL);
}

static void
test_empty_object(void **state)
{
	struct config	cfg;

	(void)state;
	assert_int_equal(load(&cfg, "{}"), 0);
	assert_string_equal(cfg.listen[0], "127.0.0.1:8090");
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].nupstreams, 1);
	config_free(&cfg);
}

static const char full[] =
    "{\n"
    "  \"listen\": [\"127.0.0.1:8090\", \"[::1]:8091\"],\n"
    "  \"cache_dir\": \"/srv/stapled\",\n"
    "  \"map_size_mb\": 64,\n"
    "  \"log_level\": \"trace\",\n"
    "  \"max_connections\": 500,\n"
    "  \"admin_max_connections\": 4,\n"
    "  \"send_buffer_kb\": 0,\n"
    "  \"header_timeout_s\": 5,\n"
    "  \"body_timeout_s\": 7,\n"
    "  \"keepalive_timeout_s\": 120,\n"
    "  \"lookup_threads\": 4,\n"
    "  \"lookup_offload\": \"always\",\n"
    "  \"ocsp\": {\n"
    "    \"upstreams\": [\n"
    "      {\"url\": \"https://ocsp.ndis.nvidia.com/\", \"name\": \"nvidia\"},\n"
    "      {\"url\": \"http://127.0.0.1:8888/ocsp\", \"verify_nonce\": false}\n"
    "    ],\n"
    "    \"anchors\": [\"/etc/stapled/root.pem\"],\n"
    "    \"intermediates\": \"/etc/stapled/ca.pem\",\n"
    "    \"paths\": [\"/nvidia/ocsp\", \"/v2\"],\n"
    "    \"mode\": \"upstream_first\",\n"
    "    \"hedge_ms\": 0,\n"
    "    \"connect_timeout_ms\": 1500,\n"
    "    \"timeout_ms\": 8000,\n"
    "    \"client_budget_ms\": 25000,\n"
    "    \"skew_s\": 300,\n"
    "    \"refresh\": {\n"
    "      \"fraction\": 0.75,\n"
    "      \"jitter\": 0,\n"
    "      \"min_interval_s\": 30,\n"
    "      \"max_interval_s\": 3600\n"
    "    },\n"
    "    \"idle_expire_s\": 86400,\n"
    "    \"rate_limit_per_s\": 2.5\n"
    "  }\n"
    "}\n";

static void
test_full(void **state)
{
	struct config	cfg;

	(void)state;
	assert_int_equal(load(&cfg, full), 0);
	assert_string_equal(err, "");
	assert_int_equal(cfg.nlisten, 2);
	assert_string_equal(cfg.listen[0], "127.0.0.1:8090");
	assert_string_equal(cfg.listen[1], "[::1]:8091");
	assert_string_equal(cfg.cache_dir, "/srv/stapled");
	assert_int_equal(cfg.map_size, (size_t)64 * 1024 * 1024);
	assert_int_equal(cfg.log_level, 2);
	assert_int_equal(cfg.max_connections, 500);
	assert_int_equal(cfg.admin_max_connections, 4);
	assert_int_equal(cfg.send_buffer_kb, 0);
	assert_int_equal(cfg.header_timeout_s, 5);
	assert_int_equal(cfg.body_timeout_s, 7);
	assert_int_equal(cfg.keepalive_timeout_s, 120);
	assert_int_equal(cfg.lookup_threads, 4);
	assert_int_equal(cfg.lookup_offload, CONFIG_OFFLOAD_ALWAYS);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].nupstreams, 2);
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[0].url,
	    "https://ocsp.ndis.nvidia.com/");
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[0].name, "nvidia");
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[0].verify_nonce, 1);
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[1].url,
	    "http://127.0.0.1:8888/ocsp");
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[1].name, "127.0.0.1:8888");
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[1].verify_nonce, 0);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].nanchors, 1);
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].anchors[0], "/etc/stapled/root.pem");
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].nintermediates, 1);
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].intermediates[0], "/etc/stapled/ca.pem");
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].npaths, 2);
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].paths[0], "/nvidia/ocsp");
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].paths[1], "/v2");
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].mode, CONFIG_MODE_UPSTREAM_FIRST);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].hedge_ms, 0);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].connect_timeout_ms, 1500);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].timeout_ms, 8000);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].client_budget_ms, 25000);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].skew_s, 300);
	assert_true(cfg.svc[CACHE_KIND_OCSP].refresh.fraction == 0.75);
	assert_true(cfg.svc[CACHE_KIND_OCSP].refresh.jitter == 0);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].refresh.min_interval_s, 30);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].refresh.max_interval_s, 3600);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].idle_expire_s, 86400);
	assert_true(cfg.svc[CACHE_KIND_OCSP].rate_limit_per_s == 2.5);
	assert_int_equal(config_validate(&cfg, err, sizeof(err)), 0);
	config_free(&cfg);
}

static void
test_string_and_list_forms(void **state)
{
	struct config	cfg;

	(void)state;
	assert_int_equal(load(&cfg, "{\"listen\": \"[::]:9000\", \"ocsp\": "
	    "{\"upstreams\": \"http://mirror.example:8080/x\", "
	    "\"anchors\": \"/a.pem\"}}"), 0);
	assert_int_equal(cfg.nlisten, 1);
	assert_string_equal(cfg.listen[0], "[::]:9000");
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].nupstreams, 1);
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[0].name, "mirror.example:8080");
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[0].verify_nonce, 1);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].nanchors, 1);
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].anchors[0], "/a.pem");
	config_free(&cfg);

	/* Lists replace the defaults; an empty anchor list means built-in roots. */
	assert_int_equal(load(&cfg, "{\"listen\": [\"0.0.0.0:1\", "
	    "\"localhost:2\"], \"ocsp\": {\"upstreams\": [\"https://a.example\", "
	    "\"https://[2001:db8::1]:8443/ocsp\"], \"anchors\": []}}"), 0);
	assert_int_equal(cfg.nlisten, 2);
	assert_string_equal(cfg.listen[1], "localhost:2");
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].nupstreams, 2);
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[0].name, "a.example");
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[1].name, "[2001:db8::1]:8443");
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].nanchors, 0);
	assert_null(cfg.svc[CACHE_KIND_OCSP].anchors);
	config_free(&cfg);
}

/* admin_listen: none by default, a string or a list, checked as listen is. */
static void
test_admin_listen(void **state)
{
	struct config	cfg;
	char		*many[CONFIG_MAX_LISTEN + 1];
	size_t		 i;

	(void)state;
	config_defaults(&cfg);
	assert_int_equal(cfg.nadmin_listen, 0);
	assert_null(cfg.admin_listen);
	config_free(&cfg);
	assert_int_equal(load(&cfg, "{\"admin_listen\": \"127.0.0.1:9090\"}"), 0);
	assert_int_equal(cfg.nadmin_listen, 1);
	assert_string_equal(cfg.admin_listen[0], "127.0.0.1:9090");
	assert_int_equal(config_validate(&cfg, err, sizeof(err)), 0);
	/* The flag's values are checked by config_validate. */
	for (i = 0; i <= CONFIG_MAX_LISTEN; i++)
		many[i] = "127.0.0.1:9";
	assert_int_equal(config_set_strlist(&cfg.admin_listen, &cfg.nadmin_listen,
	    many, CONFIG_MAX_LISTEN + 1), 0);
	assert_int_equal(config_validate(&cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "admin_listen: 17 addresses, at most 16");
	many[0] = "9090";
	assert_int_equal(config_set_strlist(&cfg.admin_listen, &cfg.nadmin_listen,
	    many, 1), 0);
	assert_int_equal(config_validate(&cfg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "admin_listen[0]: \"9090\""));
	config_free(&cfg);
	load_fails("{\"admin_listen\": [\"127.0.0.1:0\"]}",
	    NAME ":1:19: admin_listen[0]: \"127.0.0.1:0\": port must be a number "
	    "between 1 and 65535");
}

static void
test_upstream_objects(void **state)
{
	struct config	cfg;

	(void)state;
	assert_int_equal(load(&cfg, "{\"ocsp\": {\"upstreams\": ["
	    "\"https://a.example/\", "
	    "{\"url\": \"https://a.example/other\", \"name\": \"a-2\", "
	    "\"verify_nonce\": false}, "
	    "{\"verify_nonce\": true, \"url\": \"HTTPS://B.example\"}]}}"), 0);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].nupstreams, 3);
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[0].name, "a.example");
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[0].verify_nonce, 1);
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[1].name, "a-2");
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[1].verify_nonce, 0);
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[2].name, "B.example");
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[2].verify_nonce, 1);
	config_free(&cfg);

	load_fails("{\"ocsp\": {\"upstreams\": [{\"name\": \"x\"}]}}",
	    NAME ":1:25: ocsp.upstreams[0]: missing key \"url\"");
	load_fails("{\"ocsp\": {\"upstreams\": [{\"url\": \"https://a\", "
	    "\"weight\": 2}]}}",
	    NAME ":1:46: ocsp.upstreams[0]: unknown key \"weight\"");
	load_fails("{\"ocsp\": {\"upstreams\": [{\"url\": \"https://a\", "
	    "\"verify_nonce\": 1}]}}",
	    NAME ":1:62: ocsp.upstreams[0].verify_nonce: must be true or false");
	load_fails("{\"ocsp\": {\"upstreams\": [{\"url\": \"https://a\", "
	    "\"name\": \"has space\"}]}}",
	    NAME ":1:54: ocsp.upstreams[0].name: \"has space\": name may "
	    "contain only letters, digits and . _ - : [ ]");
	load_fails("{\"ocsp\": {\"upstreams\": [42]}}",
	    NAME ":1:25: ocsp.upstreams[0]: must be a URL string or an object");
	load_fails("{\"ocsp\": {\"upstreams\": []}}",
	    NAME ":1:24: ocsp.upstreams: at least one upstream is required");
	load_fails("{\"ocsp\": {\"upstreams\": {\"url\": \"https://a\"}}}",
	    NAME ":1:24: ocsp.upstreams: must be a URL string or a list");
}

static void
test_duplicate_names(void **state)
{
	(void)state;
	/* Same host, different paths: the default names collide. */
	load_fails("{\"ocsp\": {\"upstreams\": [\"https://a.example/x\",\n"
	    "  \"https://a.example/y\"]}}",
	    NAME ":2:3: ocsp.upstreams[1]: duplicate upstream name "
	    "\"a.example\" (also used by upstreams[0])");
	load_fails("{\"ocsp\": {\"upstreams\": [\"https://a.example/x\",\n"
	    "  {\"url\": \"https://b.example\", \"name\": \"a.example\"}]}}",
	    NAME ":2:40: ocsp.upstreams[1].name: duplicate upstream name "
	    "\"a.example\" (also used by upstreams[0])");
	load_fails("{\"ocsp\": {\"upstreams\": [{\"url\": \"https://a\", "
	    "\"name\": \"n\"},\n  {\"url\": \"https://b\", \"name\": \"n\"}]}}",
	    NAME ":2:32: ocsp.upstreams[1].name: duplicate upstream name "
	    "\"n\" (also used by upstreams[0])");
}

static void
test_unknown_keys(void **state)
{
	(void)state;
	load_fails("{\n  \"listen\": \"127.0.0.1:8090\",\n  \"listne\": 1\n}\n",
	    NAME ":3:3: unknown key \"listne\"");
	load_fails(
	    "{\n"
	    "  \"listen\": \"127.0.0.1:8090\",\n"
	    "  \"ocsp\": {\n"
	    "    \"hedge_ms\": 100,\n"
	    "    \"anchors\": [\"/a\\\"}],{\", \"/b\"],\n"
	    "    \"mode\": \"cache_first\",\n"
	    "    \"refersh\": {}\n"
	    "  }\n"
	    "}\n",
	    NAME ":7:5: ocsp: unknown key \"refersh\"");
	/* Several members on one line, a UTF-8 character before the key. */
	load_fails("{\"cache_dir\": \"/srv/caf\xc3\xa9\", \"ocsp\": {\"refresh\": "
	    "{\"fraction\": 0.5, \"jiter\": 0.1}}}",
	    NAME ":1:66: ocsp.refresh: unknown key \"jiter\"");
	/* A control character in an unknown key is shown escaped. */
	load_fails("{\"ocsp\": {\"a\\tb\": 1}}",
	    NAME ":1:11: ocsp: unknown key \"a\\x09b\"");
	/* The sibling services take the same keys, and api_key_file is PCCS's. */
	load_fails("{\"rim\": {\"hedge\": 1}}",
	    NAME ":1:10: rim: unknown key \"hedge\"");
	load_fails("{\"listen\": \"127.0.0.1:1\",\n \"amd_kds\": {\"api_key_file\": \"k\"}}",
	    NAME ":2:14: amd_kds: unknown key \"api_key_file\"");
	load_fails("{\"rim\": {\"paths\": [\"/x\"]}}",
	    NAME ":1:10: rim: unknown key \"paths\"");
	load_fails("{\"amd_kds\": {\"anchors\": \"a.pem\"}}",
	    NAME ":1:14: amd_kds: unknown key \"anchors\"");
	load_fails("{\"pccs\": {\"pacing_ms\": -1}}",
	    NAME ":1:24: pccs.pacing_ms: must be an integer between 0 and 600000");
}

static void
test_sibling_services(void **state)
{
	struct config	cfg;
	char		msg[256];
	const char	*js = "{\"rim\": {\"upstreams\": [\"http://127.0.0.1:1\"], "
	    "\"retention_s\": 86400},\n"
	    " \"pccs\": {\"upstreams\": [\"https://pccs.internal\", "
	    "\"https://pccs.example\"], \"api_key_file\": \"/etc/stapled/pcs.key\", "
	    "\"shuffle\": true},\n"
	    " \"amd_kds\": {\"upstreams\": \"https://kdsintf.amd.com/vcek/v1\", "
	    "\"negative_ttl_s\": 30}}";

	(void)state;
	config_defaults(&cfg);
	assert_string_equal(cfg.svc[CACHE_KIND_RIM].upstreams[0].url, "https://rim.attestation.nvidia.com");
	assert_int_equal(cfg.svc[CACHE_KIND_RIM].retention_s, 30L * 24 * 3600);
	assert_int_equal(cfg.svc[CACHE_KIND_KDS].pacing_ms, 10000);
	assert_int_equal(config_load_buffer(&cfg, "t.json", js, strlen(js), msg,
	    sizeof(msg)), 0);
	assert_int_equal(cfg.svc[CACHE_KIND_RIM].retention_s, 86400);
	assert_int_equal(cfg.svc[CACHE_KIND_PCCS].nupstreams, 2);
	assert_true(cfg.svc[CACHE_KIND_PCCS].shuffle);
	assert_string_equal(cfg.svc[CACHE_KIND_PCCS].api_key_file, "/etc/stapled/pcs.key");
	assert_int_equal(cfg.svc[CACHE_KIND_KDS].negative_ttl_s, 30);
	assert_string_equal(cfg.svc[CACHE_KIND_KDS].upstreams[0].url,
	    "https://kdsintf.amd.com/vcek/v1");
	assert_int_equal(config_validate(&cfg, msg, sizeof(msg)), 0);
	config_free(&cfg);
}

static void
test_escaped_keys(void **state)
{
	(void)state;
	/* "hedge\u005fms" is hedge_ms: the scanner decodes keys to find them. */
	load_fails("{\"ocsp\": {\"sk\\u0065w_s\": 1, \"hedge\\u005fms\": 70000}}",
	    NAME ":1:46: ocsp.hedge_ms: must be an integer between 0 and 60000");
	load_fails("{\"cache_dir\": \"/caf\\u00e9\\\"x\", \"ocsp\": {\"skew_s\": -1}}",
	    NAME ":1:51: ocsp.skew_s: must be an integer between 0 and 3600");
	load_fails("{\"\\ud83d\\ude00\": 1}",
	    NAME ":1:2: unknown key \"\\xf0\\x9f\\x98\\x80\"");
}

static void
test_syntax_errors(void **state)
{
	struct config	cfg;

	(void)state;
	assert_int_equal(load(&cfg, "{\n  \"listen\": \"127.0.0.1:8090\"\n"
	    "  \"cache_dir\": \"/x\"\n}\n"), -1);
	assert_non_null(strstr(err, NAME ":3:"));
	assert_non_null(strstr(err, ": syntax error: "));
	config_free(&cfg);

	assert_int_equal(load(&cfg, ""), -1);
	assert_int_equal(strncmp(err, NAME ":1:1: syntax error: ",
	    strlen(NAME ":1:1: syntax error: ")), 0);
	config_free(&cfg);

	assert_int_equal(load(&cfg, "{\"listen\": \"a:1\",\n \"listen\": "
	    "\"b:2\"}"), -1);
	assert_int_equal(strncmp(err, NAME ":2:", strlen(NAME ":2:")), 0);
	assert_non_null(strstr(err, "duplicate"));
	config_free(&cfg);

	load_fails("[1, 2]", NAME ":1:1: the top level must be an object");
	load_fails("\n  [1]", NAME ":2:3: the top level must be an object");
}

static void
test_types_and_ranges(void **state)
{
	(void)state;
	load_fails("{\"map_size_mb\": 0}",
	    NAME ":1:17: map_size_mb: must be an integer between 1 and "
	    "17592186044415");
	load_fails("{\"map_size_mb\": \"64\"}",
	    NAME ":1:17: map_size_mb: must be an integer between 1 and "
	    "17592186044415");
	load_fails("{\"max_connections\": -1}",
	    NAME ":1:21: max_connections: must be an integer between 0 and "
	    "1048576");
	load_fails("{\"admin_max_connections\": 0}",
	    NAME ":1:27: admin_max_connections: must be an integer between 1 "
	    "and 4096");
	load_fails("{\"send_buffer_kb\": 65537}",
	    NAME ":1:20: send_buffer_kb: must be an integer between 0 and 65536");
	load_fails("{\"header_timeout_s\": 0}",
	    NAME ":1:22: header_timeout_s: must be an integer between 1 and 3600");
	load_fails("{\"body_timeout_s\": 3601}",
	    NAME ":1:20: body_timeout_s: must be an integer between 1 and 3600");
	load_fails("{\"keepalive_timeout_s\": 1.5}",
	    NAME ":1:25: keepalive_timeout_s: must be an integer between 1 and "
	    "3600");
	load_fails("{\"log_level\": \"warn\"}",
	    NAME ":1:15: log_level: must be one of \"info\", \"debug\", "
	    "\"trace\"");
	load_fails("{\"cache_dir\": \"\"}",
	    NAME ":1:15: cache_dir: must be a non-empty string");
	load_fails("{\"cache_dir\": [\"/x\"]}",
	    NAME ":1:15: cache_dir: must be a non-empty string");
	load_fails("{\"listen\": 8090}",
	    NAME ":1:12: listen: must be a string or a list of strings");
	load_fails("{\"listen\": [\"a:1\", 2]}",
	    NAME ":1:20: listen[1]: must be a non-empty string");
	load_fails("{\"ocsp\": []}", NAME ":1:10: ocsp: must be an object");
	load_fails("{\"ocsp\": {\n  \"hedge_ms\": 60001}}",
	    NAME ":2:15: ocsp.hedge_ms: must be an integer between 0 and 60000");
	load_fails("{\"ocsp\": {\"hedge_ms\": 1.5}}",
	    NAME ":1:23: ocsp.hedge_ms: must be an integer between 0 and 60000");
	load_fails("{\"ocsp\": {\"connect_timeout_ms\": 0}}",
	    NAME ":1:33: ocsp.connect_timeout_ms: must be an integer between 1 "
	    "and 60000");
	load_fails("{\"ocsp\": {\"timeout_ms\": 300001}}",
	    NAME ":1:25: ocsp.timeout_ms: must be an integer between 1 and "
	    "300000");
	load_fails("{\"ocsp\": {\"client_budget_ms\": 30000}}",
	    NAME ":1:31: ocsp.client_budget_ms: must be an integer between 1 "
	    "and 25000");
	load_fails("{\"ocsp\": {\"skew_s\": 3601}}",
	    NAME ":1:21: ocsp.skew_s: must be an integer between 0 and 3600");
	load_fails("{\"ocsp\": {\"mode\": \"fast\"}}",
	    NAME ":1:19: ocsp.mode: must be one of \"cache_first\", "
	    "\"upstream_first\"");
	load_fails("{\"ocsp\": {\"idle_expire_s\": 59}}",
	    NAME ":1:28: ocsp.idle_expire_s: must be an integer between 60 and "
	    "315360000");
	load_fails("{\"ocsp\": {\"rate_limit_per_s\": 0}}",
	    NAME ":1:31: ocsp.rate_limit_per_s: must be a number greater "
	    "than 0");
	load_fails("{\"ocsp\": {\"rate_limit_per_s\": true}}",
	    NAME ":1:31: ocsp.rate_limit_per_s: must be a number greater "
	    "than 0");
	load_fails("{\"ocsp\": {\"refresh\": {\"fraction\": 0.96}}}",
	    NAME ":1:35: ocsp.refresh.fraction: must be a number between 0.05 "
	    "and 0.95");
	load_fails("{\"ocsp\": {\"refresh\": {\"jitter\": -0.1}}}",
	    NAME ":1:33: ocsp.refresh.jitter: must be a number between 0 and "
	    "0.5");
	load_fails("{\"ocsp\": {\"refresh\": {\"min_interval_s\": 0}}}",
	    NAME ":1:41: ocsp.refresh.min_interval_s: must be an integer "
	    "between 1 and 315360000");
	load_fails("{\"ocsp\": {\"refresh\": {\"min_interval_s\": 60, "
	    "\"max_interval_s\": 59}}}",
	    NAME ":1:63: ocsp.refresh.max_interval_s: must not be less than "
	    "min_interval_s (60)");
	load_fails("{\"ocsp\": {\"refresh\": {\"min_interval_s\": 50000}}}",
	    NAME ":1:41: ocsp.refresh.min_interval_s: must not exceed "
	    "max_interval_s (43200)");
	load_fails("{\"ocsp\": {\"refresh\": 1}}",
	    NAME ":1:22: ocsp.refresh: must be an object");
	load_fails("{\"ocsp\": {\"paths\": \"/x\"}}",
	    NAME ":1:20: ocsp.paths: must be a list of strings");
	load_fails("{\"ocsp\": {\"paths\": [\"/ok\", \"ocsp2\"]}}",
	    NAME ":1:28: ocsp.paths[1]: \"ocsp2\": path must start with /");
	load_fails("{\"ocsp\": {\"anchors\": [\"\"]}}",
	    NAME ":1:23: ocsp.anchors[0]: must be a non-empty string");
	load_fails("{\"ocsp\": {\"intermediates\": {}}}",
	    NAME ":1:28: ocsp.intermediates: must be a string or a list of "
	    "strings");
}

static void
test_bad_urls(void **state)
{
	char	e[160];

	(void)state;
	load_fails("{\"ocsp\": {\"upstreams\": \"ftp://ocsp.example\"}}",
	    NAME ":1:24: ocsp.upstreams: \"ftp://ocsp.example\": URL must "
	    "start with http:// or https://");
	load_fails("{\"ocsp\": {\"upstreams\": [\"https://a\", \"https:///ocsp\"]}}",
	    NAME ":1:38: ocsp.upstreams[1]: \"https:///ocsp\": URL has no host");
	load_fails("{\"ocsp\": {\"upstreams\": [{\"url\": \"http://\"}]}}",
	    NAME ":1:33: ocsp.upstreams[0].url: \"http://\": URL has no host");
	load_fails("{\"ocsp\": {\"upstreams\": \"http://:80/\"}}",
	    NAME ":1:24: ocsp.upstreams: \"http://:80/\": URL has no host");
	load_fails("{\"ocsp\": {\"upstreams\": \"http://a:99999/\"}}",
	    NAME ":1:24: ocsp.upstreams: \"http://a:99999/\": port must be a "
	    "number between 1 and 65535");
	load_fails("{\"ocsp\": {\"upstreams\": \"https://u:p@a/\"}}",
	    NAME ":1:24: ocsp.upstreams: \"https://u:p@a/\": URL must not "
	    "contain user information");

	assert_int_equal(config_check_url("https://ocsp.ndis.nvidia.com", e,
	    sizeof(e)), 0);
	assert_int_equal(config_check_url("http://[::1]:8080/ocsp", e,
	    sizeof(e)), 0);
	assert_int_equal(config_check_url("ftp://x", e, sizeof(e)), -1);
	assert_string_equal(e, "URL must start with http:// or https://");
	assert_int_equal(config_check_url("https://", e, sizeof(e)), -1);
	assert_string_equal(e, "URL has no host");
	assert_int_equal(config_check_url("https://a b/", e, sizeof(e)), -1);
	assert_int_equal(config_check_url("https://[::1/", e, sizeof(e)), -1);
	assert_int_equal(config_check_url("https://::1/", e, sizeof(e)), -1);
	assert_int_equal(config_check_url("ocsp.example", e, sizeof(e)), -1);
}

static void
test_listen(void **state)
{
	struct config	cfg;
	char		host[64];
	int		port;

	(void)state;
	load_fails("{\"listen\": [\"127.0.0.1:8090\",\n  \"localhost\"]}",
	    NAME ":2:3: listen[1]: \"localhost\": expected HOST:PORT");
	load_fails("{\"listen\": \"::1:8090\"}",
	    NAME ":1:12: listen: \"::1:8090\": IPv6 addresses need brackets, "
	    "as in [::1]:8090");
	load_fails("{\"listen\": \"a:0\"}",
	    NAME ":1:12: listen: \"a:0\": port must be a number between 1 and "
	    "65535");
	load_fails("{\"listen\": \"[::1]\"}",
	    NAME ":1:12: listen: \"[::1]\": expected HOST:PORT");

	config_defaults(&cfg);
	assert_int_equal(config_validate(&cfg, err, sizeof(err)), 0);
	{
		char *l[] = { "127.0.0.1:8090", "localhost" };

		assert_int_equal(config_set_strlist(&cfg.listen, &cfg.nlisten,
		    l, 2), 0);
	}
	assert_int_equal(config_validate(&cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "listen[1]: \"localhost\": expected HOST:PORT");
	{
		char *l[] = { "[::1]:65536" };

		assert_int_equal(config_set_strlist(&cfg.listen, &cfg.nlisten,
		    l, 1), 0);
	}
	assert_int_equal(config_validate(&cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "listen[0]: \"[::1]:65536\": port must be a "
	    "number between 1 and 65535");
	assert_int_equal(config_set_strlist(&cfg.listen, &cfg.nlisten, NULL, 0),
	    0);
	assert_int_equal(config_validate(&cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "listen: at least one address is required");
	{
		char *l[] = { "[::1]:8090" };

		assert_int_equal(config_set_strlist(&cfg.listen, &cfg.nlisten,
		    l, 1), 0);
	}
	assert_int_equal(config_set_str(&cfg.cache_dir, ""), 0);
	assert_int_equal(config_validate(&cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "cache_dir: must not be empty");
	config_free(&cfg);

	assert_int_equal(config_split_listen("[::1]:8090", host, sizeof(host),
	    &port), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(port, 8090);
	assert_int_equal(config_split_listen("127.0.0.1:1", host, sizeof(host),
	    &port), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 1);
	assert_int_equal(config_split_listen("localhost", host, sizeof(host),
	    &port), -1);
	assert_int_equal(config_split_listen("averylonghostname:1", host, 8,
	    &port), -1);
}

static void
test_setters(void **state)
{
	struct config	cfg;
	char		*one[] = { "https://a.example/ocsp" };
	char		*two[] = { "http://b.example:81", "https://c.example" };
	char		*bad[] = { "https://ok.example", "ftp://bad" };
	char		*dup[] = { "https://d.example/1", "https://d.example/2" };

	(void)state;
	config_defaults(&cfg);
	assert_int_equal(config_set_upstreams(&cfg.svc[CACHE_KIND_OCSP], one, 1), 0);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].nupstreams, 1);
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[0].name, "a.example");
	assert_int_equal(config_set_upstreams(&cfg.svc[CACHE_KIND_OCSP], two, 2), 0);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].nupstreams, 2);
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[0].name, "b.example:81");
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[1].url, "https://c.example");
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[1].verify_nonce, 1);

	/* A failed call leaves the previous list in place. */
	errno = 0;
	assert_int_equal(config_set_upstreams(&cfg.svc[CACHE_KIND_OCSP], bad, 2), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(config_set_upstreams(&cfg.svc[CACHE_KIND_OCSP], dup, 2), -1);
	assert_int_equal(errno, EEXIST);
	errno = 0;
	assert_int_equal(config_set_upstreams(&cfg.svc[CACHE_KIND_OCSP], one, 0), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].nupstreams, 2);
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].upstreams[0].name, "b.example:81");

	assert_int_equal(config_set_strlist(&cfg.svc[CACHE_KIND_OCSP].anchors,
	    &cfg.svc[CACHE_KIND_OCSP].nanchors, two, 2), 0);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].nanchors, 2);
	assert_ptr_not_equal(cfg.svc[CACHE_KIND_OCSP].anchors[0], two[0]);
	assert_string_equal(cfg.svc[CACHE_KIND_OCSP].anchors[0], two[0]);
	assert_int_equal(config_set_strlist(&cfg.svc[CACHE_KIND_OCSP].anchors,
	    &cfg.svc[CACHE_KIND_OCSP].nanchors, one, 1), 0);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].nanchors, 1);

	assert_int_equal(config_set_str(&cfg.cache_dir, "/tmp/x"), 0);
	assert_string_equal(cfg.cache_dir, "/tmp/x");
	assert_int_equal(config_set_str(&cfg.cache_dir, NULL), 0);
	assert_null(cfg.cache_dir);
	assert_int_equal(config_validate(&cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "cache_dir: must not be empty");
	config_free(&cfg);
}

/* Errors late in the file, after lists were already replaced: no leaks. */
static void
test_partial_free(void **state)
{
	(void)state;
	load_fails("{\"listen\": [\"a:1\", \"b:2\"], \"cache_dir\": \"/c\", "
	    "\"ocsp\": {\"upstreams\": [\"https://a\", \"https://b\"], "
	    "\"anchors\": [\"/x\", \"/y\"], \"intermediates\": \"/i\", "
	    "\"paths\": [\"/p\"], \"refresh\": {\"fraction\": 0.5}, "
	    "\"upstreams\": 0}}",
	    NAME ":1:202: duplicate object key near '\"upstreams\"'");
	load_fails("{\"listen\": [\"a:1\", \"b:2\"], \"cache_dir\": \"/c\", "
	    "\"ocsp\": {\"upstreams\": [\"https://a\", \"https://b\"], "
	    "\"anchors\": [\"/x\", \"/y\"], \"intermediates\": \"/i\", "
	    "\"paths\": [\"/p\"], \"refresh\": {\"fraction\": 0.5, \"x\": 1}}}",
	    NAME ":1:191: ocsp.refresh: unknown key \"x\"");
	/* A bad element in the middle of a list: the copies so far are freed. */
	load_fails("{\"ocsp\": {\"anchors\": [\"/x\", \"/y\", 3]}}",
	    NAME ":1:35: ocsp.anchors[2]: must be a non-empty string");
	load_fails("{\"ocsp\": {\"upstreams\": [\"https://a\", \"https://b\", "
	    "{\"url\": \"https://c\", \"name\": 7}]}}",
	    NAME ":1:80: ocsp.upstreams[2].name: must be a string");
	load_fails("{\"listen\": [\"a:1\", \"b:2\", \"c\"]}",
	    NAME ":1:27: listen[2]: \"c\": expected HOST:PORT");
}

static void
test_load_file(void **state)
{
	struct config	cfg;
	char		path[] = "test_config.XXXXXX";
	FILE		*f;
	int		fd;

	(void)state;
	assert_true((fd = mkstemp(path)) != -1);
	assert_non_null(f = fdopen(fd, "w"));
	fputs("{\n  \"ocsp\": {\n    \"hedge_ms\": -5\n  }\n}\n", f);
	fclose(f);
	config_defaults(&cfg);
	assert_int_equal(config_load_file(&cfg, path, err, sizeof(err)), -1);
	{
		char want[128];

		snprintf(want, sizeof(want), "%s:3:17: ocsp.hedge_ms: must be an "
		    "integer between 0 and 60000", path);
		assert_string_equal(err, want);
	}
	config_free(&cfg);
	unlink(path);

	config_defaults(&cfg);
	assert_int_equal(config_load_file(&cfg, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, path));
	config_free(&cfg);
}

/* Which service sections take which keys: the table must say what stapled always said. */
static void
test_service_acceptance(void **state)
{
	static const struct {
		const char	*key;
		const char	*value;
		unsigned	 in;	/* bit per enum cache_kind */
	} keys[] = {
#define ALL	0x1eu
#define BIT(s)	(1u << (s))
		{ "upstreams", "\"https://u.example\"", ALL },
		{ "anchors", "[\"/a.pem\"]", BIT(CACHE_KIND_OCSP) | BIT(CACHE_KIND_RIM) },
		{ "intermediates", "\"/i.pem\"", BIT(CACHE_KIND_OCSP) },
		{ "paths", "[\"/p\"]", BIT(CACHE_KIND_OCSP) },
		{ "mode", "\"upstream_first\"", ALL },
		{ "hedge_ms", "0", ALL },
		{ "connect_timeout_ms", "1", ALL },
		{ "timeout_ms", "300000", ALL },
		{ "client_budget_ms", "25000", ALL },
		{ "skew_s", "0", ALL },
		{ "refresh", "{\"fraction\": 0.05, \"jitter\": 0.5}", ALL },
		{ "idle_expire_s", "60", ALL },
		{ "rate_limit_per_s", "0.5", ALL },
		{ "shuffle", "true", ALL },
		{ "negative_ttl_s", "3600", ALL },
		{ "pacing_ms", "600000", ALL },
		{ "retention_s", "0", BIT(CACHE_KIND_RIM) },
		{ "api_key_file", "\"/k\"", BIT(CACHE_KIND_PCCS) },
		/* Top-level and upstream keys are not service keys. */
		{ "listen", "\"127.0.0.1:1\"", 0 },
		{ "cache_dir", "\"/c\"", 0 },
		{ "url", "\"https://u.example\"", 0 },
		{ "verify_nonce", "false", 0 },
		{ "fraction", "0.5", 0 },
#undef ALL
#undef BIT
	};
	struct config	cfg;
	char		js[256], want[256];
	size_t		i;
	int		svc;

	(void)state;
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		for (svc = CACHE_KIND_OCSP; svc < CACHE_KIND_MAX; svc++) {
			snprintf(js, sizeof(js), "{\"%s\": {\"%s\": %s}}",
			    kind_section[svc], keys[i].key, keys[i].value);
			if (keys[i].in & (1u << svc)) {
				assert_int_equal(load(&cfg, js), 0);
				config_free(&cfg);
				continue;
			}
			snprintf(want, sizeof(want), NAME ":1:%zu: %s: unknown "
			    "key \"%s\"", strlen(kind_section[svc]) + 7,
			    kind_section[svc], keys[i].key);
			load_fails(js, want);
		}
	/* And the other way round: service keys are unknown at the top. */
	load_fails("{\"hedge_ms\": 1}", NAME ":1:2: unknown key \"hedge_ms\"");
	load_fails("{\"upstreams\": \"https://a\"}",
	    NAME ":1:2: unknown key \"upstreams\"");
	load_fails("{\"kds\": {}}", NAME ":1:2: unknown key \"kds\"");
}

/* An upstream object takes url, name and verify_nonce in every service, nothing else. */
static void
test_upstream_keys(void **state)
{
	struct config			 cfg;
	const struct config_service	*s;
	char				 js[256], want[256];
	int				 svc;

	(void)state;
	for (svc = CACHE_KIND_OCSP; svc < CACHE_KIND_MAX; svc++) {
		snprintf(js, sizeof(js), "{\"%s\": {\"upstreams\": ["
		    "{\"url\": \"https://a.example/x\", \"name\": \"a-1\", "
		    "\"verify_nonce\": false}, {\"url\": \"https://a.example/y\"}, "
		    "\"http://b.example:81\"]}}", kind_section[svc]);
		assert_int_equal(load(&cfg, js), 0);
		assert_non_null(s = config_service(&cfg, svc));
		assert_int_equal(s->nupstreams, 3);
		assert_string_equal(s->upstreams[0].name, "a-1");
		assert_int_equal(s->upstreams[0].verify_nonce, 0);
		assert_string_equal(s->upstreams[1].name, "a.example");
		assert_int_equal(s->upstreams[1].verify_nonce, 1);
		assert_string_equal(s->upstreams[2].name, "b.example:81");
		assert_int_equal(s->upstreams[2].verify_nonce, 1);
		config_free(&cfg);

		snprintf(js, sizeof(js), "{\"%s\": {\"upstreams\": [{\"url\": "
		    "\"https://a\", \"shuffle\": true}]}}", kind_section[svc]);
		snprintf(want, sizeof(want), NAME ":1:%zu: %s.upstreams[0]: "
		    "unknown key \"shuffle\"", strlen(kind_section[svc]) + 42,
		    kind_section[svc]);
		load_fails(js, want);
	}
	load_fails("{\"pccs\": {\"upstreams\": [{\"url\": 1}]}}",
	    NAME ":1:33: pccs.upstreams[0].url: must be a string");
	load_fails("{\"rim\": {\"upstreams\": {\"url\": \"https://a\"}}}",
	    NAME ":1:23: rim.upstreams: must be a URL string or a list");
	load_fails("{\"amd_kds\": {\"upstreams\": [{\"url\": \"https://a\", "
	    "\"name\": \"\"}]}}",
	    NAME ":1:57: amd_kds.upstreams[0].name: \"\": name must have 1 to "
	    "255 characters");
	/* A refresh key is not an upstream key, nor a service key. */
	load_fails("{\"ocsp\": {\"upstreams\": [{\"url\": \"https://a\", "
	    "\"jitter\": 0}]}}",
	    NAME ":1:46: ocsp.upstreams[0]: unknown key \"jitter\"");
}

/* The defaults, per service, come from the one table. */
static void
test_service_defaults(void **state)
{
	static const char *const url[CACHE_KIND_MAX] = {
		[CACHE_KIND_OCSP] = "https://ocsp.ndis.nvidia.com",
		[CACHE_KIND_RIM] = "https://rim.attestation.nvidia.com",
		[CACHE_KIND_PCCS] = "https://api.trustedservices.intel.com",
		[CACHE_KIND_KDS] = "https://kdsintf.amd.com",
	};
	static const char *const name[CACHE_KIND_MAX] = {
		[CACHE_KIND_OCSP] = "ocsp", [CACHE_KIND_RIM] = "rim",
		[CACHE_KIND_PCCS] = "pccs", [CACHE_KIND_KDS] = "amd_kds"
	};
	struct config			 cfg;
	const struct config_service	*s;
	int				 svc;

	(void)state;
	config_defaults(&cfg);
	assert_ptr_equal(config_service(&cfg, CACHE_KIND_OCSP), &cfg.svc[CACHE_KIND_OCSP]);
	assert_ptr_equal(config_service(&cfg, CACHE_KIND_RIM), &cfg.svc[CACHE_KIND_RIM]);
	assert_ptr_equal(config_service(&cfg, CACHE_KIND_PCCS), &cfg.svc[CACHE_KIND_PCCS]);
	assert_ptr_equal(config_service(&cfg, CACHE_KIND_KDS), &cfg.svc[CACHE_KIND_KDS]);
	assert_null(config_service(&cfg, CACHE_KIND_MAX));
	assert_null(config_service(&cfg, 0));
	for (svc = CACHE_KIND_OCSP; svc < CACHE_KIND_MAX; svc++) {
		s = config_service(&cfg, svc);
		assert_string_equal(kind_section[svc], name[svc]);
		assert_int_equal(s->nupstreams, 1);
		assert_string_equal(s->upstreams[0].url, url[svc]);
		assert_string_equal(s->upstreams[0].name, url[svc] + 8);
		assert_int_equal(s->upstreams[0].verify_nonce, 1);
		assert_int_equal(s->mode, CONFIG_MODE_CACHE_FIRST);
		assert_int_equal(s->hedge_ms, 500);
		assert_int_equal(s->connect_timeout_ms, 2000);
		assert_int_equal(s->timeout_ms, 10000);
		assert_int_equal(s->client_budget_ms, 5000);
		assert_int_equal(s->skew_s, 60);
		assert_true(s->refresh.fraction == 0.5);
		assert_true(s->refresh.jitter == 0.1);
		assert_int_equal(s->refresh.min_interval_s, 10);
		assert_int_equal(s->refresh.max_interval_s, 43200);
		assert_int_equal(s->idle_expire_s, 30L * 24 * 3600);
		assert_true(s->rate_limit_per_s == 20);
		assert_int_equal(s->shuffle, 0);
		assert_int_equal(s->negative_ttl_s, 60);
		assert_int_equal(s->pacing_ms, svc == CACHE_KIND_KDS ? 10000 : 0);
		assert_int_equal(s->retention_s,
		    svc == CACHE_KIND_RIM ? 30L * 24 * 3600 : 0);
		assert_int_equal(s->nanchors + s->nintermediates + s->npaths, 0);
		assert_null(s->api_key_file);
	}
	/* retention_s 0 means the default; any other value is itself. */
	cfg.svc[CACHE_KIND_RIM].retention_s = 0;
	assert_int_equal(config_retention_s(&cfg.svc[CACHE_KIND_RIM],
	    CACHE_KIND_RIM), 30L * 24 * 3600);
	cfg.svc[CACHE_KIND_RIM].retention_s = 60;
	assert_int_equal(config_retention_s(&cfg.svc[CACHE_KIND_RIM],
	    CACHE_KIND_RIM), 60);
	config_free(&cfg);
}

/* errno tells a file that cannot be read from one whose content is refused. */
static void
test_load_errno(void **state)
{
	struct config	cfg;
	char		path[] = "test_config.XXXXXX";
	FILE		*f;
	int		fd;

	(void)state;
	assert_true((fd = mkstemp(path)) != -1);
	assert_non_null(f = fdopen(fd, "w"));
	fputs("{\"ocsp\": {\"anchor\": []}}\n", f);
	fclose(f);
	config_defaults(&cfg);
	errno = 0;
	assert_int_equal(config_load_file(&cfg, path, err, sizeof(err)), -1);
	assert_int_equal(errno, EINVAL);
	config_free(&cfg);
	unlink(path);
	config_defaults(&cfg);
	errno = 0;
	assert_int_equal(config_load_file(&cfg, path, err, sizeof(err)), -1);
	assert_int_equal(errno, ENOENT);
	config_free(&cfg);
	errno = 0;
	assert_int_equal(load(&cfg, "{"), -1);
	assert_int_equal(errno, EINVAL);
	config_free(&cfg);
}

/* The upstream cap, the per-client miss rate and trusted_proxies. */
static void
test_upstream_bounds(void **state)
{
	struct config		cfg;
	struct config_cidr	c;

	(void)state;
	config_defaults(&cfg);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].max_upstream_inflight,
	    CONFIG_DEFAULT_UPSTREAM_INFLIGHT);
	assert_int_equal(cfg.svc[CACHE_KIND_KDS].max_upstream_inflight, 32);
	assert_true(cfg.svc[CACHE_KIND_RIM].client_miss_rate_per_s == 100.0);
	assert_int_equal(cfg.ntrusted_proxies, 0);
	config_free(&cfg);

	assert_int_equal(load(&cfg, "{\"rim\": {\"max_upstream_inflight\": 4, "
	    "\"client_miss_rate_per_s\": 0.5}, \"trusted_proxies\": "
	    "[\"127.0.0.1\", \"10.0.0.0/8\", \"fd00::/8\"]}"), 0);
	assert_int_equal(cfg.svc[CACHE_KIND_RIM].max_upstream_inflight, 4);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].max_upstream_inflight, 32);
	assert_true(cfg.svc[CACHE_KIND_RIM].client_miss_rate_per_s == 0.5);
	assert_int_equal(cfg.ntrusted_proxies, 3);
	assert_string_equal(cfg.trusted_proxies[1], "10.0.0.0/8");
	config_free(&cfg);
	assert_int_equal(load(&cfg, "{\"trusted_proxies\": \"::1\", "
	    "\"ocsp\": {\"client_miss_rate_per_s\": 0}}"), 0);
	assert_int_equal(cfg.ntrusted_proxies, 1);
	assert_true(cfg.svc[CACHE_KIND_OCSP].client_miss_rate_per_s == 0);
	config_free(&cfg);

	load_fails("{\"ocsp\": {\"max_upstream_inflight\": 0}}",
	    NAME ":1:36: ocsp.max_upstream_inflight: must be an integer between "
	    "1 and 4096");
	load_fails("{\"pccs\": {\"client_miss_rate_per_s\": -1}}",
	    NAME ":1:37: pccs.client_miss_rate_per_s: must be a number between "
	    "0 and 1e+06");

	/* a client is a prefix; new entries per second per service */
	config_defaults(&cfg);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].client_ipv6_prefix, 64);
	assert_int_equal(cfg.svc[CACHE_KIND_KDS].client_ipv4_prefix, 32);
	assert_true(cfg.svc[CACHE_KIND_RIM].new_entry_rate_per_s == 100.0);
	config_free(&cfg);
	assert_int_equal(load(&cfg, "{\"ocsp\": {\"client_ipv6_prefix\": 48, "
	    "\"client_ipv4_prefix\": 24, \"new_entry_rate_per_s\": 0}}"), 0);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].client_ipv6_prefix, 48);
	assert_int_equal(cfg.svc[CACHE_KIND_OCSP].client_ipv4_prefix, 24);
	assert_true(cfg.svc[CACHE_KIND_OCSP].new_entry_rate_per_s == 0);
	assert_int_equal(cfg.svc[CACHE_KIND_RIM].client_ipv6_prefix, 64);
	config_free(&cfg);
	load_fails("{\"ocsp\": {\"client_ipv6_prefix\": 129}}",
	    NAME ":1:33: ocsp.client_ipv6_prefix: must be an integer between "
	    "0 and 128");
	load_fails("{\"rim\": {\"client_ipv4_prefix\": 33}}",
	    NAME ":1:32: rim.client_ipv4_prefix: must be an integer between "
	    "0 and 32");
	load_fails("{\"pccs\": {\"new_entry_rate_per_s\": -1}}",
	    NAME ":1:35: pccs.new_entry_rate_per_s: must be a number between "
	    "0 and 1e+06");
	load_fails("{\"trusted_proxies\": [\"10.0.0.0/33\"]}",
	    NAME ":1:22: trusted_proxies[0]: \"10.0.0.0/33\": expected an IP "
	    "address or ADDRESS/PREFIX");
	load_fails("{\"trusted_proxies\": \"proxy.example\"}",
	    NAME ":1:21: trusted_proxies: \"proxy.example\": expected an IP "
	    "address or ADDRESS/PREFIX");
	load_fails("{\"ocsp\": {\"trusted_proxies\": []}}",
	    NAME ":1:11: ocsp: unknown key \"trusted_proxies\"");

	assert_int_equal(config_parse_cidr("192.168.1.0/24", &c), 0);
	assert_int_equal(c.prefix, 24);
	assert_int_equal(c.addr[2], 1);
	assert_int_equal(config_parse_cidr("2001:db8::/32", &c), 0);
	assert_int_equal(c.prefix, 32);
	assert_int_equal(config_parse_cidr("::1", &c), 0);
	assert_int_equal(c.prefix, 128);
	assert_int_equal(config_parse_cidr("10.0.0.0/", &c), -1);
	assert_int_equal(config_parse_cidr("10.0.0.0/-1", &c), -1);
	assert_int_equal(config_parse_cidr("10.0.0.0/8x", &c), -1);
	assert_int_equal(config_parse_cidr("/8", &c), -1);
	assert_int_equal(config_parse_cidr("::1/129", &c), -1);
}

/* What start refuses, -n refuses: at most CONFIG_MAX_LISTEN addresses. */
static void
test_listen_count(void **state)
{
	struct config	cfg;
	char		*l[CONFIG_MAX_LISTEN + 1], buf[CONFIG_MAX_LISTEN + 1][32];
	size_t		i;

	(void)state;
	for (i = 0; i <= CONFIG_MAX_LISTEN; i++) {
		snprintf(buf[i], sizeof(buf[i]), "127.0.0.1:%zu", 20000 + i);
		l[i] = buf[i];
	}
	config_defaults(&cfg);
	assert_int_equal(config_set_strlist(&cfg.listen, &cfg.nlisten, l,
	    CONFIG_MAX_LISTEN), 0);
	assert_int_equal(config_validate(&cfg, err, sizeof(err)), 0);
	assert_int_equal(config_set_strlist(&cfg.listen, &cfg.nlisten, l,
	    CONFIG_MAX_LISTEN + 1), 0);
	assert_int_equal(config_validate(&cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "listen: 17 addresses, at most 16");
	config_free(&cfg);
}

/* listen objects: TLS files beside their address, in order with plain ones. */
static void
test_listen_tls(void **state)
{
	struct config		 cfg;
	const struct config_tls	*t;
	char			*plain[] = { "127.0.0.1:1" }, *tls[] = { "[::1]:2" };
	struct config_tls	 files = { "c.pem", "k.pem", NULL };

	(void)state;
	assert_int_equal(load(&cfg, "{\"listen\": [\"127.0.0.1:8090\", "
	    "{\"addr\": \"0.0.0.0:8443\", \"tls\": {\"cert\": \"c.pem\", "
	    "\"key\": \"k.pem\", \"client_ca\": \"ca.pem\"}}, "
	    "{\"addr\": \"127.0.0.1:8091\"}]}"), 0);
	assert_int_equal(config_validate(&cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.nlisten, 3);
	assert_string_equal(cfg.listen[1], "0.0.0.0:8443");
	assert_null(config_listen_tls(&cfg, 0));
	assert_non_null(t = config_listen_tls(&cfg, 1));
	assert_string_equal(t->cert, "c.pem");
	assert_string_equal(t->key, "k.pem");
	assert_string_equal(t->client_ca, "ca.pem");
	assert_string_equal(cfg.listen[2], "127.0.0.1:8091");
	assert_null(config_listen_tls(&cfg, 2));
	/* The flags replace the list: plain ones first, then the TLS ones. */
	assert_int_equal(config_set_listen(&cfg, plain, 1, tls, 1, &files), 0);
	assert_int_equal(cfg.nlisten, 2);
	assert_null(config_listen_tls(&cfg, 0));
	assert_non_null(t = config_listen_tls(&cfg, 1));
	assert_string_equal(cfg.listen[1], "[::1]:2");
	assert_null(t->client_ca);
	/* No TLS left: listen_tls goes away with it. */
	assert_int_equal(config_set_listen(&cfg, plain, 1, NULL, 0, NULL), 0);
	assert_null(cfg.listen_tls);
	config_free(&cfg);

	load_fails("{\"listen\": {\"tls\": {\"cert\": \"c\", \"key\": \"k\"}}}",
	    NAME ":1:12: listen: missing key \"addr\"");
	load_fails("{\"listen\": [{\"addr\": \"a:1\", \"tls\": {\"cert\": \"c\"}}]}",
	    NAME ":1:36: listen[0].tls: missing key \"key\"");
	load_fails("{\"listen\": [{\"addr\": \"a\"}]}",
	    NAME ":1:22: listen[0].addr: \"a\": expected HOST:PORT");
	load_fails("{\"listen\": [{\"addr\": \"a:1\", \"tls\": {\"cert\": \"\", "
	    "\"key\": \"k\"}}]}",
	    NAME ":1:45: listen[0].tls.cert: \"\": must name a file");
	load_fails("{\"listen\": [{\"addr\": \"a:1\", \"ocsp\": {}}]}",
	    NAME ":1:29: listen[0]: unknown key \"ocsp\"");
	load_fails("{\"listen\": [{\"addr\": \"a:1\", \"tls\": \"x\"}]}",
	    NAME ":1:36: listen[0].tls: must be an object");
}

/* upstream_tls: the top level's for every service, unless a section gives its own, whole. */
static void
test_upstream_tls(void **state)
{
	struct config				 cfg;
	const struct config_upstream_tls	*t;

	(void)state;
	config_defaults(&cfg);
	t = config_upstream_tls(&cfg, CACHE_KIND_OCSP);
	assert_null(t->ca_file);
	assert_null(t->cert_file);
	assert_null(t->key_file);
	config_free(&cfg);

	assert_int_equal(load(&cfg, "{\"upstream_tls\": {\"ca_file\": \"ca.pem\", "
	    "\"cert_file\": \"c.pem\", \"key_file\": \"k.pem\"}, "
	    "\"amd_kds\": {\"upstream_tls\": {}}, "
	    "\"pccs\": {\"upstream_tls\": {\"ca_file\": \"intel.pem\"}}}"), 0);
	assert_int_equal(config_validate(&cfg, err, sizeof(err)), 0);
	t = config_upstream_tls(&cfg, CACHE_KIND_OCSP);
	assert_string_equal(t->ca_file, "ca.pem");
	assert_string_equal(t->cert_file, "c.pem");
	assert_string_equal(t->key_file, "k.pem");
	assert_ptr_equal(config_upstream_tls(&cfg, CACHE_KIND_RIM), t);
	/* {}: the system's store and no client certificate, not the top level's. */
	t = config_upstream_tls(&cfg, CACHE_KIND_KDS);
	assert_null(t->ca_file);
	assert_null(t->cert_file);
	/* A section's replaces the top level's whole: no client certificate inherited. */
	t = config_upstream_tls(&cfg, CACHE_KIND_PCCS);
	assert_string_equal(t->ca_file, "intel.pem");
	assert_null(t->cert_file);
	assert_null(t->key_file);
	assert_null(config_upstream_tls(&cfg, CACHE_KIND_MAX));
	config_free(&cfg);

	load_fails("{\"upstream_tls\": {\"cert_file\": \"c.pem\"}}",
	    NAME ":1:18: upstream_tls: missing key \"key_file\" "
	    "(cert_file's private key)");
	load_fails("{\"ocsp\": {\"upstream_tls\": {\"key_file\": \"k.pem\"}}}",
	    NAME ":1:27: ocsp.upstream_tls: missing key \"cert_file\" "
	    "(key_file's certificate)");
	load_fails("{\"upstream_tls\": {\"ca_file\": \"\"}}",
	    NAME ":1:30: upstream_tls.ca_file: must be a non-empty string");
	load_fails("{\"upstream_tls\": {\"cafile\": \"x\"}}",
	    NAME ":1:19: upstream_tls: unknown key \"cafile\"");
	load_fails("{\"upstream_tls\": \"ca.pem\"}",
	    NAME ":1:18: upstream_tls: must be an object");
}

/* The files are read: one that is absent, or holds no PEM, is named with its key. */
static void
test_upstream_tls_check(void **state)
{
	struct config	cfg;
	char		path[] = "test_config_tls.XXXXXX";
	int		fd;

	(void)state;
	config_defaults(&cfg);
	assert_int_equal(config_upstream_tls_check(&cfg, err, sizeof(err)), 0);
	assert_true((fd = mkstemp(path)) != -1);
	assert_int_equal(write(fd, "not PEM\n", 8), 8);
	close(fd);
	assert_int_equal(config_set_str(&cfg.svc[CACHE_KIND_RIM].upstream_tls.ca_file, path), 0);
	cfg.svc[CACHE_KIND_RIM].upstream_tls.given = 1;
	assert_int_equal(config_upstream_tls_check(&cfg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "rim.upstream_tls.ca_file test_config_tls."));
	assert_non_null(strstr(err, "holds no certificate"));
	assert_int_equal(config_set_str(&cfg.upstream_tls.cert_file,
	    "/nonexistent/c.pem"), 0);
	assert_int_equal(config_set_str(&cfg.upstream_tls.key_file, path), 0);
	assert_int_equal(config_upstream_tls_check(&cfg, err, sizeof(err)), -1);
	assert_string_equal(err, "upstream_tls.cert_file /nonexistent/c.pem: "
	    "No such file or directory");
	unlink(path);
	config_free(&cfg);
}

/* A FIFO (or any non-regular file) is refused at once, never read. */
static void
test_load_fifo(void **state)
{
	struct config	cfg;
	char		path[] = "test_config_fifo.XXXXXX";
	int		fd;

	(void)state;
	assert_true((fd = mkstemp(path)) != -1);
	close(fd);
	unlink(path);
	assert_int_equal(mkfifo(path, 0600), 0);
	config_defaults(&cfg);
	alarm(10);		/* a blocking open would hang here */
	errno = 0;
	assert_int_equal(config_load_file(&cfg, path, err, sizeof(err)), -1);
	alarm(0);
	assert_int_equal(errno, ESPIPE);
	assert_non_null(strstr(err, "not a regular file"));
	config_free(&cfg);
	unlink(path);
	config_defaults(&cfg);
	assert_int_equal(config_load_file(&cfg, ".", err, sizeof(err)), -1);
	assert_int_equal(errno, ESPIPE);
	config_free(&cfg);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_empty_object),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_string_and_list_forms),
		cmocka_unit_test(test_admin_listen),
		cmocka_unit_test(test_upstream_objects),
		cmocka_unit_test(test_duplicate_names),
		cmocka_unit_test(test_unknown_keys),
		cmocka_unit_test(test_sibling_services),
		cmocka_unit_test(test_escaped_keys),
		cmocka_unit_test(test_syntax_errors),
		cmocka_unit_test(test_types_and_ranges),
		cmocka_unit_test(test_bad_urls),
		cmocka_unit_test(test_listen),
		cmocka_unit_test(test_setters),
		cmocka_unit_test(test_partial_free),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_service_acceptance),
		cmocka_unit_test(test_upstream_keys),
		cmocka_unit_test(test_service_defaults),
		cmocka_unit_test(test_load_errno),
		cmocka_unit_test(test_upstream_bounds),
		cmocka_unit_test(test_listen_count),
		cmocka_unit_test(test_listen_tls),
		cmocka_unit_test(test_load_fifo),
		cmocka_unit_test(test_upstream_tls),
		cmocka_unit_test(test_upstream_tls_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
