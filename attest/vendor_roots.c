/* SPDX-License-Identifier: Apache-2.0 */
/* Pinned vendor roots for collateral: Intel SGX Root CA and AMD ARKs (generated). */
/*
 * Made from the vendor files listed in tests/vectors/intel/SOURCES.md and
 * tests/vectors/amd/SOURCES.md (DER -> PEM, nothing else changed).
 * tests/unit/test_intel.c and test_amd.c compare these with those files.
 */
#include "config.h"

#include <limits.h>
#include <stddef.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "attest/der.h"
#include "attest/vendor_roots.h"

/*
 * C=US,ST=CA,L=Santa Clara,O=Intel Corporation,CN=Intel SGX Root CA
 * SHA-256 44A0196B2B99F889B8E149E95B807A350E7424964399E885A7CBB8CCFAB674D3
 * notAfter Dec 31 23:59:59 2049 GMT
 */
const struct vendor_root intel_sgx_root_ca = {
	"C=US,ST=CA,L=Santa Clara,O=Intel Corporation,CN=Intel SGX Root CA",
	"44A0196B2B99F889B8E149E95B807A350E7424964399E885A7CBB8CCFAB674D3",
	"-----BEGIN CERTIFICATE-----\n"
	"MIICjzCCAjSgAwIBAgIUImUM1lqdNInzg7SVUr9QGzknBqwwCgYIKoZIzj0EAwIw\n"
	"aDEaMBgGA1UEAwwRSW50ZWwgU0dYIFJvb3QgQ0ExGjAYBgNVBAoMEUludGVsIENv\n"
	"cnBvcmF0aW9uMRQwEgYDVQQHDAtTYW50YSBDbGFyYTELMAkGA1UECAwCQ0ExCzAJ\n"
	"BgNVBAYTAlVTMB4XDTE4MDUyMTEwNDUxMFoXDTQ5MTIzMTIzNTk1OVowaDEaMBgG\n"
	"A1UEAwwRSW50ZWwgU0dYIFJvb3QgQ0ExGjAYBgNVBAoMEUludGVsIENvcnBvcmF0\n"
	"aW9uMRQwEgYDVQQHDAtTYW50YSBDbGFyYTELMAkGA1UECAwCQ0ExCzAJBgNVBAYT\n"
	"AlVTMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEC6nEwMDIYZOj/iPWsCzaEKi7\n"
	"1OiOSLRFhWGjbnBVJfVnkY4u3IjkDYYL0MxO4mqsyYjlBalTVYxFP2sJBK5zlKOB\n"
	"uzCBuDAfBgNVHSMEGDAWgBQiZQzWWp00ifODtJVSv1AbOScGrDBSBgNVHR8ESzBJ\n"
	"MEegRaBDhkFodHRwczovL2NlcnRpZmljYXRlcy50cnVzdGVkc2VydmljZXMuaW50\n"
	"ZWwuY29tL0ludGVsU0dYUm9vdENBLmRlcjAdBgNVHQ4EFgQUImUM1lqdNInzg7SV\n"
	"Ur9QGzknBqwwDgYDVR0PAQH/BAQDAgEGMBIGA1UdEwEB/wQIMAYBAf8CAQEwCgYI\n"
	"KoZIzj0EAwIDSQAwRgIhAOW/5QkR+S9CiSDcNoowLuPRLsWGf/Yi7GSX94BgwTwg\n"
	"AiEA4J0lrHoMs+Xo5o/sX6O9QWxHRAvZUGOdRQ7cvqRXaqI=\n"
	"-----END CERTIFICATE-----\n"
};

/*
 * CN=ARK-Milan,O=Advanced Micro Devices,ST=CA,L=Santa Clara,C=US,OU=Engineering
 * SHA-256 69D063B45344D26A2E94E1F4210DE49EF555308287D4C174445C95639A540BCD
 * notAfter Oct 22 17:23:05 2045 GMT
 */
const struct vendor_root amd_ark_milan = {
	"CN=ARK-Milan,O=Advanced Micro Devices,ST=CA,L=Santa Clara,C=US,OU=Engineering",
	"69D063B45344D26A2E94E1F4210DE49EF555308287D4C174445C95639A540BCD",
	"-----BEGIN CERTIFICATE-----\n"
	"MIIGYzCCBBKgAwIBAgIDAQAAMEYGCSqGSIb3DQEBCjA5oA8wDQYJYIZIAWUDBAIC\n"
	"BQChHDAaBgkqhkiG9w0BAQgwDQYJYIZIAWUDBAICBQCiAwIBMKMDAgEBMHsxFDAS\n"
	"BgNVBAsMC0VuZ2luZWVyaW5nMQswCQYDVQQGEwJVUzEUMBIGA1UEBwwLU2FudGEg\n"
	"Q2xhcmExCzAJBgNVBAgMAkNBMR8wHQYDVQQKDBZBZHZhbmNlZCBNaWNybyBEZXZp\n"
	"Y2VzMRIwEAYDVQQDDAlBUkstTWlsYW4wHhcNMjAxMDIyMTcyMzA1WhcNNDUxMDIy\n"
	"MTcyMzA1WjB7MRQwEgYDVQQLDAtFbmdpbmVlcmluZzELMAkGA1UEBhMCVVMxFDAS\n"
	"BgNVBAcMC1NhbnRhIENsYXJhMQswCQYDVQQIDAJDQTEfMB0GA1UECgwWQWR2YW5j\n"
	"ZWQgTWljcm8gRGV2aWNlczESMBAGA1UEAwwJQVJLLU1pbGFuMIICIjANBgkqhkiG\n"
	"9w0BAQEFAAOCAg8AMIICCgKCAgEA0Ld52RJOdeiJlqK2JdsVmD7FktuotWwX1fNg\n"
	"W41XY9Xz1HEhSUmhLz9Cu9DHRlvgJSNxbeYYsnJfvyjx1MfU0V5tkKiU1EesNFta\n"
	"1kTA0szNisdYc9isqk7mXT5+KfGRbfc4V/9zRIcE8jlHN61S1ju8X93+6dxDUrG2\n"
	"SzxqJ4BhqyYmUDruPXJSX4vUc01P7j98MpqOS95rORdGHeI52Naz5m2B+O+vjsC0\n"
	"60d37jY9LFeuOP4Meri8qgfi2S5kKqg/aF6aPtuAZQVR7u3KFYXP59XmJgtcog05\n"
	"gmI0T/OitLhuzVvpZcLph0odh/1IPXqx3+MnjD97A7fXpqGd/y8KxX7jksTEzAOg\n"
	"bKAeam3lm+3yKIcTYMlsRMXPcjNbIvmsBykD//xSniusuHBkgnlENEWx1UcbQQrs\n"
	"+gVDkuVPhsnzIRNgYvM48Y+7LGiJYnrmE8xcrexekBxrva2V9TJQqnN3Q53kt5vi\n"
	"Qi3+gCfmkwC0F0tirIZbLkXPrPwzZ0M9eNxhIySb2npJfgnqz55I0u33wh4r0ZNQ\n"
	"eTGfw03MBUtyuzGesGkcw+loqMaq1qR4tjGbPYxCvpCq7+OgpCCoMNit2uLo9M18\n"
	"fHz10lOMT8nWAUvRZFzteXCm+7PHdYPlmQwUw3LvenJ/ILXoQPHfbkH0CyPfhl1j\n"
	"WhJFZasCAwEAAaN+MHwwDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBSFrBrRQ/fI\n"
	"rFXUxR1BSKvVeErUUzAPBgNVHRMBAf8EBTADAQH/MDoGA1UdHwQzMDEwL6AtoCuG\n"
	"KWh0dHBzOi8va2RzaW50Zi5hbWQuY29tL3ZjZWsvdjEvTWlsYW4vY3JsMEYGCSqG\n"
	"SIb3DQEBCjA5oA8wDQYJYIZIAWUDBAICBQChHDAaBgkqhkiG9w0BAQgwDQYJYIZI\n"
	"AWUDBAICBQCiAwIBMKMDAgEBA4ICAQC6m0kDp6zv4Ojfgy+zleehsx6ol0ocgVel\n"
	"ETobpx+EuCsqVFRPK1jZ1sp/lyd9+0fQ0r66n7kagRk4Ca39g66WGTJMeJdqYriw\n"
	"STjjDCKVPSesWXYPVAyDhmP5n2v+BYipZWhpvqpaiO+EGK5IBP+578QeW/sSokrK\n"
	"dHaLAxG2LhZxj9aF73fqC7OAJZ5aPonw4RE299FVarh1Tx2eT3wSgkDgutCTB1Yq\n"
	"zT5DuwvAe+co2CIVIzMDamYuSFjPN0BCgojl7V+bTou7dMsqIu/TW/rPCX9/EUcp\n"
	"KGKqPQ3P+N9r1hjEFY1plBg93t53OOo49GNI+V1zvXPLI6xIFVsh+mto2RtgEX/e\n"
	"pmMKTNN6psW88qg7c1hTWtN6MbRuQ0vm+O+/2tKBF2h8THb94OvvHHoFDpbCELlq\n"
	"HnIYhxy0YKXGyaW1NjfULxrrmxVW4wcn5E8GddmvNa6yYm8scJagEi13mhGu4Jqh\n"
	"3QU3sf8iUSUr09xQDwHtOQUVIqx4maBZPBtSMf+qUDtjXSSq8lfWcd8bLr9mdsUn\n"
	"JZJ0+tuPMKmBnSH860llKk+VpVQsgqbzDIvOLvD6W1Umq25boxCYJ+TuBoa4s+HH\n"
	"CViAvgT9kf/rBq1d+ivj6skkHxuzcxbk1xv6ZGxrteJxVH7KlX7YRdZ6eARKwLe4\n"
	"AFZEAwoKCQ==\n"
	"-----END CERTIFICATE-----\n"
};

/*
 * CN=ARK-Genoa,O=Advanced Micro Devices,ST=CA,L=Santa Clara,C=US,OU=Engineering
 * SHA-256 4C6598D19C18719C5DFD4A7D335F674E5BFE1D8F800CEA2CF270C10D103DB2F1
 * notAfter Jan 26 15:34:37 2047 GMT
 */
const struct vendor_root amd_ark_genoa = {
	"CN=ARK-Genoa,O=Advanced Micro Devices,ST=CA,L=Santa Clara,C=US,OU=Engineering",
	"4C6598D19C18719C5DFD4A7D335F674E5BFE1D8F800CEA2CF270C10D103DB2F1",
	"-----BEGIN CERTIFICATE-----\n"
	"MIIGYzCCBBKgAwIBAgIDAgAAMEYGCSqGSIb3DQEBCjA5oA8wDQYJYIZIAWUDBAIC\n"
	"BQChHDAaBgkqhkiG9w0BAQgwDQYJYIZIAWUDBAICBQCiAwIBMKMDAgEBMHsxFDAS\n"
	"BgNVBAsMC0VuZ2luZWVyaW5nMQswCQYDVQQGEwJVUzEUMBIGA1UEBwwLU2FudGEg\n"
	"Q2xhcmExCzAJBgNVBAgMAkNBMR8wHQYDVQQKDBZBZHZhbmNlZCBNaWNybyBEZXZp\n"
	"Y2VzMRIwEAYDVQQDDAlBUkstR2Vub2EwHhcNMjIwMTI2MTUzNDM3WhcNNDcwMTI2\n"
	"MTUzNDM3WjB7MRQwEgYDVQQLDAtFbmdpbmVlcmluZzELMAkGA1UEBhMCVVMxFDAS\n"
	"BgNVBAcMC1NhbnRhIENsYXJhMQswCQYDVQQIDAJDQTEfMB0GA1UECgwWQWR2YW5j\n"
	"ZWQgTWljcm8gRGV2aWNlczESMBAGA1UEAwwJQVJLLUdlbm9hMIICIjANBgkqhkiG\n"
	"9w0BAQEFAAOCAg8AMIICCgKCAgEA3Cd95S/uFOuRIskW9vz9VDBF69NDQF79oRhL\n"
	"/L2PVQGhK3YdfEBgpF/JiwWFBsT/fXDhzA01p3LkcT/7LdjcRfKXjHl+0Qq/M4dZ\n"
	"kh6QDoUeKzNBLDcBKDDGWo3v35NyrxbA1DnkYwUKU5AAk4P94tKXLp80oxt84ahy\n"
	"HoLmc/LqsGsp+oq1Bz4PPsYLwTG4iMKVaaT90/oZ4I8oibSru92vJhlqWO27d/Rx\n"
	"c3iUMyhNeGToOvgx/iUo4gGpG61NDpkEUvIzuKcaMx8IdTpWg2DF6SwF0IgVMffn\n"
	"vtJmA68BwJNWo1E4PLJdaPfBifcJpuBFwNVQIPQEVX3aP89HJSp8YbY9lySS6PlV\n"
	"EqTBBtaQmi4ATGmMR+n2K/e+JAhU2Gj7jIpJhOkdH9firQDnmlA2SFfJ/Cc0mGNz\n"
	"W9RmIhyOUnNFoclmkRhl3/AQU5Ys9Qsan1jT/EiyT+pCpmnA+y9edvhDCbOG8F2o\n"
	"xHGRdTBkylungrkXJGYiwGrR8kaiqv7NN8QhOBMqYjcbrkEr0f8QMKklIS5ruOfq\n"
	"lLMCBw8JLB3LkjpWgtD7OpxkzSsohN47Uom86RY6lp72g8eXHP1qYrnvhzaG1S70\n"
	"vw6OkbaaC9EjiH/uHgAJQGxon7u0Q7xgoREWA/e7JcBQwLg80Hq/sbRuqesxz7wB\n"
	"WSY254cCAwEAAaN+MHwwDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBSfXfn+Ddjz\n"
	"WtAzGiXvgSlPvjGoWzAPBgNVHRMBAf8EBTADAQH/MDoGA1UdHwQzMDEwL6AtoCuG\n"
	"KWh0dHBzOi8va2RzaW50Zi5hbWQuY29tL3ZjZWsvdjEvR2Vub2EvY3JsMEYGCSqG\n"
	"SIb3DQEBCjA5oA8wDQYJYIZIAWUDBAICBQChHDAaBgkqhkiG9w0BAQgwDQYJYIZI\n"
	"AWUDBAICBQCiAwIBMKMDAgEBA4ICAQAdIlPBC7DQmvH7kjlOznFx3i21SzOPDs5L\n"
	"7SgFjMC9rR07292GQCA7Z7Ulq97JQaWeD2ofGGse5swj4OQfKfVv/zaJUFjvosZO\n"
	"nfZ63epu8MjWgBSXJg5QE/Al0zRsZsp53DBTdA+Uv/s33fexdenT1mpKYzhIg/cK\n"
	"tz4oMxq8JKWJ8Po1CXLzKcfrTphjlbkh8AVKMXeBd2SpM33B1YP4g1BOdk013kqb\n"
	"7bRHZ1iB2JHG5cMKKbwRCSAAGHLTzASgDcXr9Fp7Z3liDhGu/ci1opGmkp12QNiJ\n"
	"uBbkTU+xDZHm5X8Jm99BX7NEpzlOwIVR8ClgBDyuBkBC2ljtr3ZSaUIYj2xuyWN9\n"
	"5KFY49nWxcz90CFa3Hzmy4zMQmBe9dVyls5eL5p9bkXcgRMDTbgmVZiAf4afe8DL\n"
	"dmQcYcMFQbHhgVzMiyZHGJgcCrQmA7MkTwEIds1wx/HzMcwU4qqNBAoZV7oeIIPx\n"
	"dqFXfPqHqiRlEbRDfX1TG5NFVaeByX0GyH6jzYVuezETzruaky6fp2bl2bczxPE8\n"
	"HdS38ijiJmm9vl50RGUeOAXjSuInGR4bsRufeGPB9peTa9BcBOeTWzstqTUB/F/q\n"
	"aZCIZKr4X6TyfUuSDz/1JDAGl+lxdM0P9+lLaP9NahQjHCVf0zf1c1salVuGFk2w\n"
	"/wMz1R1BHg==\n"
	"-----END CERTIFICATE-----\n"
};

/*
 * CN=ARK-Turin,O=Advanced Micro Devices,ST=CA,L=Santa Clara,C=US,OU=Engineering
 * SHA-256 1F084161A44BB6D93778A904877D4819CAFA5D05EF4193B2DED9DD9C73DD3F6A
 * notAfter May 15 20:03:12 2048 GMT
 */
const struct vendor_root amd_ark_turin = {
	"CN=ARK-Turin,O=Advanced Micro Devices,ST=CA,L=Santa Clara,C=US,OU=Engineering",
	"1F084161A44BB6D93778A904877D4819CAFA5D05EF4193B2DED9DD9C73DD3F6A",
	"-----BEGIN CERTIFICATE-----\n"
	"MIIGYzCCBBKgAwIBAgIDAwAAMEYGCSqGSIb3DQEBCjA5oA8wDQYJYIZIAWUDBAIC\n"
	"BQChHDAaBgkqhkiG9w0BAQgwDQYJYIZIAWUDBAICBQCiAwIBMKMDAgEBMHsxFDAS\n"
	"BgNVBAsMC0VuZ2luZWVyaW5nMQswCQYDVQQGEwJVUzEUMBIGA1UEBwwLU2FudGEg\n"
	"Q2xhcmExCzAJBgNVBAgMAkNBMR8wHQYDVQQKDBZBZHZhbmNlZCBNaWNybyBEZXZp\n"
	"Y2VzMRIwEAYDVQQDDAlBUkstVHVyaW4wHhcNMjMwNTE1MjAwMzEyWhcNNDgwNTE1\n"
	"MjAwMzEyWjB7MRQwEgYDVQQLDAtFbmdpbmVlcmluZzELMAkGA1UEBhMCVVMxFDAS\n"
	"BgNVBAcMC1NhbnRhIENsYXJhMQswCQYDVQQIDAJDQTEfMB0GA1UECgwWQWR2YW5j\n"
	"ZWQgTWljcm8gRGV2aWNlczESMBAGA1UEAwwJQVJLLVR1cmluMIICIjANBgkqhkiG\n"
	"9w0BAQEFAAOCAg8AMIICCgKCAgEAwaAriB7EIuVc4ZB1wD3YfDxL+9eyS7+izm0J\n"
	"j3W772NINCWl8Bj3w/JD2ZjmbRxWdIq/4d9iarCKorXloJUB1jRdgxqccTx1aOoi\n"
	"g4+2w1XhVVJT7K457wT5ZLNJgQaxqa9Etkwjd6+9sOhlCDE9l43kQ0R2BikVJa/u\n"
	"yyVOSwEk5w5tXKOuG9jvq6QtAMJasW38wlqRDaKEGtZ9VUgGon27ZuL4sTJuC/az\n"
	"z9/iQBw8kEilzOl95AiTkeY5jSEBDWbAqnZk5qlM7kISKG20kgQm14mhNKDI2p2o\n"
	"ua+zuAG7i52epoRF2GfU0TYk/yf+vCNB2tnechFQuP2e8bLk95ZdqPi9/UWw4JXj\n"
	"tdEA4u2JYplSSUPQVAXKt6LVqujtJcM59JKr2u0XQ75KwxcMp15gSXhBfInvPAwu\n"
	"AY4dEwwGqT8oIg4esPHwEsmChhYeDIxPG9R4fx9O0q6p8Gb+HXlTiS47P9YNeOpi\n"
	"dOUKzDl/S1OvyhDtSL8LJc24QATFydo/iD/KUdvFTRlD0crkAMkZLoWQ8hLDGc6B\n"
	"ZJXsdd7Zf2e4UW3tI/1oh/2t23Ot3zyhTcv5gDbABu0LjVe98uRnS15SMwK//lJt\n"
	"9e5BqKvgABkSoABf+B4VFtPVEX0ygrYaFaI9i5ABrxnVBmzXpRb21iI1NlNCfOGU\n"
	"PIhVpWECAwEAAaN+MHwwDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBRkoF9x4wwK\n"
	"ZNg7deUBWZ4r7gYDRDAPBgNVHRMBAf8EBTADAQH/MDoGA1UdHwQzMDEwL6AtoCuG\n"
	"KWh0dHBzOi8va2RzaW50Zi5hbWQuY29tL3ZjZWsvdjEvVHVyaW4vY3JsMEYGCSqG\n"
	"SIb3DQEBCjA5oA8wDQYJYIZIAWUDBAICBQChHDAaBgkqhkiG9w0BAQgwDQYJYIZI\n"
	"AWUDBAICBQCiAwIBMKMDAgEBA4ICAQA/i6Mz4IETMK8YU/HxP7Bfej5i4aXhenJo\n"
	"TuiDX0nqx5CDJm9ELhskxAkJ/oLA1O92UoLybfFk4gEpKFtyfiUYex9LogZj5ix0\n"
	"sb2qfSSy9CRnOktGqfpel4e3KAhLgF5n2qZrqyq/8EPPldtSjEXn78sZMlIlUcQK\n"
	"SnnNCQZVFpktDfDiEiGNuitux3ghHUrcVuxSbZcrXDbsbMF7NDdfLUUS9TijrL33\n"
	"lrCXJs7m8kggGyCusiRQKHli1AEswiA4xU+8xsZrByYTopiGYtbJK8s0UCCXylyO\n"
	"uKSubvdAnMDJ5GDD0+DX46LSfv7fgGNSG+LOBWdif7KoQf9cIhKJtxGxZCn/tvHm\n"
	"wMzu4Jnx8N2vRnT+8DpBqhxtNvdXmrZUelSeQakx4djMKvmTR8Gd25EnC4RppCkj\n"
	"bmPxY3zPd1X7raalTn34EOF9DeLsC9JfzkDuojxpHWMm30wKnDo20mlDQk/zKCDa\n"
	"2Zc+YjtsTZCrTbvdgCukTKNZOUUVlWRu+sO/OwrmS2p16seHTIqHEbE1LntPv3gk\n"
	"CcHGDSUAKx9c0Aol+Dj9xpb2nmGqoDeJ59Ja6REkHCdw5TduXyqqMqfD1AX0/QDN\n"
	"devCMKlWBRCQ7DFlog3H1a+r/kuMUZ/Ij9yyKlSgYZMJ4VgNKDgTQdcsAL0MCEMr\n"
	"zpacMwFusA==\n"
	"-----END CERTIFICATE-----\n"
};

/* ---- helpers for intel.c and amd.c ------------------------------------- */

static const char	pem_begin[] = "-----BEGIN CERTIFICATE-----";
static const char	pem_end[] = "-----END CERTIFICATE-----";

static int
is_ws(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Where `needle` first occurs in buf[0, len), or NULL. */
static const uint8_t *
find(const uint8_t *buf, size_t len, const char *needle)
{
	size_t	 n = strlen(needle), i;

	if (len < n)
		return NULL;
	for (i = 0; i + n <= len; i++)
		if (buf[i] == (uint8_t)needle[0] && memcmp(buf + i, needle, n) == 0)
			return buf + i;
	return NULL;
}

/*
 * Parse one PEM block buf[0, len), which starts with pem_begin; its bytes
 * pass der_cert_check (attest/der.h) first.
 */
static X509 *
pem_one(const uint8_t *buf, size_t len, const char **why)
{
	BIO	*bio;
	X509	*x = NULL;

	*why = "PEM certificate too large";
	if (len > INT_MAX)
		return NULL;
	*why = "out of memory";
	if ((bio = BIO_new_mem_buf(buf, (int)len)) == NULL)
		return NULL;
	if ((x = der_pem_x509(bio, why)) == NULL && *why == NULL)
		*why = "malformed PEM certificate";
	BIO_free(bio);
	return x;
}

X509 *
vendor_root_x509(const struct vendor_root *r)
{
	X509		*x;
	const char	*why;

	if (r == NULL || r->pem == NULL)
		return NULL;
	x = pem_one((const uint8_t *)r->pem, strlen(r->pem), &why);
	ERR_clear_error();
	return x;
}

STACK_OF(X509) *
vendor_pem_certs(const uint8_t *buf, size_t len, int max, const char **why)
{
	STACK_OF(X509)	*sk;
	const uint8_t	*p = buf, *end = buf + len, *e;
	X509		*x;

	*why = "out of memory";
	if (buf == NULL) {
		*why = "no certificates";
		return NULL;
	}
	if ((sk = sk_X509_new_null()) == NULL)
		return NULL;
	for (;;) {
		while (p < end && is_ws(*p))
			p++;
		if (p == end)
			break;
		if ((size_t)(end - p) < sizeof(pem_begin) - 1 ||
		    memcmp(p, pem_begin, sizeof(pem_begin) - 1) != 0) {
			*why = "text outside a PEM certificate block";
			goto fail;
		}
		if ((e = find(p, (size_t)(end - p), pem_end)) == NULL) {
			*why = "PEM certificate block not terminated";
			goto fail;
		}
		e += sizeof(pem_end) - 1;
		if (sk_X509_num(sk) >= max) {
			*why = "too many certificates";
			goto fail;
		}
		if ((x = pem_one(p, (size_t)(e - p), why)) == NULL)
			goto fail;
		if (sk_X509_push(sk, x) == 0) {
			X509_free(x);
			goto fail;
		}
		p = e;
	}
	if (sk_X509_num(sk) == 0) {
		*why = "no certificates";
		goto fail;
	}
	ERR_clear_error();
	return sk;
 fail:
	sk_X509_pop_free(sk, X509_free);
	ERR_clear_error();
	return NULL;
}

X509 *
vendor_cert_parse(const uint8_t *buf, size_t len, const char **why)
{
	STACK_OF(X509)	*sk;
	X509		*x = NULL;

	*why = "empty";
	if (buf == NULL || len == 0 || len > LONG_MAX)
		return NULL;
	if (buf[0] == 0x30)
		return der_x509(buf, len, why);
	if ((sk = vendor_pem_certs(buf, len, 1, why)) == NULL)
		return NULL;
	x = sk_X509_shift(sk);
	sk_X509_pop_free(sk, X509_free);
	return x;
}
