/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The certificates of a local cluster's private etcd (clusterctl up): a CA
 * made for this cluster, etcd's server certificate (127.0.0.1, localhost)
 * and the client certificate the mons present. etcd runs with
 * --client-cert-auth, so only a holder of a certificate this CA signed can
 * read or change the cluster map. Keys are P-256, files with keys 0600.
 *
 * etcd's own grpc-gateway (the JSON API the mons use) connects to etcd's
 * gRPC port with the server certificate, so that one is also good for
 * client authentication.
 */
#include "ctl.h"
#include "cm/err.h"
#include "cm/random.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#define CERT_DAYS 3650

struct pair {
	EVP_PKEY *key;
	X509 *cert;
};

static void
pair_free(struct pair *p)
{
	EVP_PKEY_free(p->key);
	X509_free(p->cert);
}

static int
add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	int ok;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ext)
		return -EINVAL;
	ok = X509_add_ext(cert, ext, -1);
	X509_EXTENSION_free(ext);
	return ok ? 0 : -ENOMEM;
}

/*
 * A new key and a certificate for cn, signed by ca (NULL: self-signed, a
 * CA), with the extensions nids[i] = vals[i] (nids ends with 0).
 */
static int
make_pair(const char *cn, const struct pair *ca, const int *nids, const char *const *vals,
	  struct pair *out)
{
	uint8_t serial[16];
	BIGNUM *bn = NULL;
	X509_NAME *name;
	X509 *x;
	int rc = -ENOMEM;

	memset(out, 0, sizeof(*out));
	out->key = EVP_EC_gen("P-256");
	out->cert = x = X509_new();
	if (!out->key || !x)
		goto fail;
	if (cm_random_bytes(serial, sizeof(serial))) {
		rc = -EIO;
		goto fail;
	}
	serial[0] &= 0x7f; /* a positive serial */
	bn = BN_bin2bn(serial, sizeof(serial), NULL);
	name = X509_get_subject_name(x);
	if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) || !X509_set_version(x, 2) ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), (long)CERT_DAYS * 86400) ||
	    !X509_set_pubkey(x, out->key) ||
	    !X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const uint8_t *)"cairn", -1, -1,
					0) ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const uint8_t *)cn, -1, -1, 0) ||
	    !X509_set_issuer_name(x, ca ? X509_get_subject_name(ca->cert) : name))
		goto fail;
	for (size_t i = 0; nids[i]; i++) {
		rc = add_ext(x, ca ? ca->cert : x, nids[i], vals[i]);
		if (rc)
			goto fail;
	}
	rc = -EINVAL;
	if (!X509_sign(x, ca ? ca->key : out->key, EVP_sha256()))
		goto fail;
	BN_free(bn);
	return 0;
fail:
	BN_free(bn);
	pair_free(out);
	memset(out, 0, sizeof(*out));
	return rc;
}

/* Write p's certificate to dir/name.pem and its key to dir/name.key (0600). */
static int
save_pair(const char *dir, const char *name, const struct pair *p)
{
	char path[PATH_MAX];
	FILE *f;
	int fd, ok;

	snprintf(path, sizeof(path), "%s/%s.pem", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	ok = PEM_write_X509(f, p->cert);
	if (fclose(f) || !ok)
		return -EIO;
	snprintf(path, sizeof(path), "%s/%s.key", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0600) || !(f = fdopen(fd, "w"))) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	ok = PEM_write_PrivateKey(f, p->key, NULL, NULL, 0, NULL, NULL);
	if (fclose(f) || !ok)
		return -EIO;
	return 0;
}

int
ctl_tls_make(const char *dir)
{
	static const int ca_nids[] = { NID_basic_constraints, NID_key_usage,
				       NID_subject_key_identifier, 0 };
	static const char *const ca_vals[] = { "critical,CA:TRUE", "critical,keyCertSign,cRLSign",
					       "hash" };
	static const int srv_nids[] = { NID_basic_constraints,
					NID_key_usage,
					NID_ext_key_usage,
					NID_subject_alt_name,
					NID_authority_key_identifier,
					0 };
	static const char *const srv_vals[] = { "critical,CA:FALSE",
						"critical,digitalSignature,keyEncipherment",
						"serverAuth,clientAuth",
						"IP:127.0.0.1,DNS:localhost", "keyid" };
	static const int cli_nids[] = { NID_basic_constraints, NID_key_usage, NID_ext_key_usage,
					NID_authority_key_identifier, 0 };
	static const char *const cli_vals[] = { "critical,CA:FALSE", "critical,digitalSignature",
						"clientAuth", "keyid" };
	struct pair ca, srv = { 0 }, cli = { 0 };
	int rc;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	rc = make_pair("cairn etcd CA", NULL, ca_nids, ca_vals, &ca);
	if (rc)
		return rc;
	rc = make_pair("etcd", &ca, srv_nids, srv_vals, &srv);
	if (!rc)
		rc = make_pair("cairn-mon", &ca, cli_nids, cli_vals, &cli);
	if (!rc)
		rc = save_pair(dir, "ca", &ca);
	if (!rc)
		rc = save_pair(dir, "etcd", &srv);
	if (!rc)
		rc = save_pair(dir, "client", &cli);
	pair_free(&ca);
	pair_free(&srv);
	pair_free(&cli);
	return rc;
}
