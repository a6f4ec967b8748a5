/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Entity keys (cm/auth.h). The crypto is OpenSSL's: HKDF through
 * EVP_PKEY_derive, AES-256-GCM through EVP, base64 through EVP_Encode.
 */
#include "cm/auth.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <sys/stat.h>

bool
cm_auth_valid_name(const char *name)
{
	static const char *const types[] = { "client.", "osd.", "mds.", "mon." };
	size_t n = name ? strlen(name) : 0, t = 0;

	if (n == 0 || n > CM_AUTH_NAME_MAX)
		return false;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strncmp(name, types[i], strlen(types[i])))
			t = strlen(types[i]);
	if (!t || t == n)
		return false;
	for (size_t i = t; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

void
cm_auth_key_encode(const uint8_t key[CM_AUTH_KEY_LEN], char out[CM_AUTH_KEY_B64 + 1])
{
	EVP_EncodeBlock((unsigned char *)out, key, CM_AUTH_KEY_LEN);
	out[CM_AUTH_KEY_B64] = 0;
}

int
cm_auth_key_decode(const char *s, uint8_t key[CM_AUTH_KEY_LEN])
{
	unsigned char buf[CM_AUTH_KEY_B64 + 4];
	char in[CM_AUTH_KEY_B64 + 1];
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	/* 32 bytes are 43 base64 characters and one '=' of padding. */
	if (n != CM_AUTH_KEY_B64 || s[CM_AUTH_KEY_B64 - 1] != '=' || s[CM_AUTH_KEY_B64 - 2] == '=')
		return -EINVAL;
	memcpy(in, s, n);
	in[n] = 0;
	for (size_t i = 0; i + 1 < n; i++) {
		char c = in[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '+' || c == '/'))
			return -EINVAL;
	}
	/* EVP_DecodeBlock counts the padding as zero bytes: 33 out. */
	if (EVP_DecodeBlock(buf, (const unsigned char *)in, (int)n) != CM_AUTH_KEY_LEN + 1)
		return -EINVAL;
	memcpy(key, buf, CM_AUTH_KEY_LEN);
	OPENSSL_cleanse(buf, sizeof(buf));
	OPENSSL_cleanse(in, sizeof(in));
	return 0;
}

int
cm_auth_key_random(uint8_t key[CM_AUTH_KEY_LEN])
{
	return RAND_bytes(key, CM_AUTH_KEY_LEN) == 1 ? 0 : -EIO;
}

int
cm_auth_derive(const void *secret, size_t len, const char *info, uint8_t out[CM_AUTH_KEY_LEN])
{
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
	size_t outlen = CM_AUTH_KEY_LEN;
	int ok;

	if (!c)
		return -EIO;
	ok = EVP_PKEY_derive_init(c) > 0 && EVP_PKEY_CTX_set_hkdf_md(c, EVP_sha256()) > 0 &&
	     EVP_PKEY_CTX_set1_hkdf_key(c, secret, (int)len) > 0 &&
	     EVP_PKEY_CTX_add1_hkdf_info(c, (const unsigned char *)info, (int)strlen(info)) > 0 &&
	     EVP_PKEY_derive(c, out, &outlen) > 0 && outlen == CM_AUTH_KEY_LEN;
	EVP_PKEY_CTX_free(c);
	return ok ? 0 : -EIO;
}

int
cm_auth_kek(const char *cluster_key, uint8_t out[CM_AUTH_KEY_LEN])
{
	return cm_auth_derive(cluster_key, strlen(cluster_key), "cairn-kek", out);
}

int
cm_auth_entity_key(const char *cluster_key, const char *name, uint8_t out[CM_AUTH_KEY_LEN])
{
	char info[CM_AUTH_NAME_MAX + 32];

	snprintf(info, sizeof(info), "cairn-entity %s", name);
	return cm_auth_derive(cluster_key, strlen(cluster_key), info, out);
}

#define NONCE 12
#define TAG   16

int
cm_auth_seal(const uint8_t key[CM_AUTH_KEY_LEN], const void *aad, size_t aadlen, const void *pt,
	     size_t n, uint8_t **out, size_t *outlen)
{
	EVP_CIPHER_CTX *c;
	uint8_t *b;
	int l, ok;

	if (n > INT_MAX - CM_AUTH_SEAL_OVERHEAD || aadlen > INT_MAX)
		return -EINVAL;
	b = malloc(n + CM_AUTH_SEAL_OVERHEAD);
	if (!b)
		return -ENOMEM;
	if (RAND_bytes(b, NONCE) != 1) {
		free(b);
		return -EIO;
	}
	c = EVP_CIPHER_CTX_new();
	ok = c && EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, b) == 1 &&
	     (!aadlen || EVP_EncryptUpdate(c, NULL, &l, aad, (int)aadlen) == 1) &&
	     (!n || EVP_EncryptUpdate(c, b + NONCE, &l, pt, (int)n) == 1) &&
	     EVP_EncryptFinal_ex(c, b + NONCE + n, &l) == 1 &&
	     EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, TAG, b + NONCE + n) == 1;
	EVP_CIPHER_CTX_free(c);
	if (!ok) {
		free(b);
		return -EIO;
	}
	*out = b;
	*outlen = n + CM_AUTH_SEAL_OVERHEAD;
	return 0;
}

int
cm_auth_open(const uint8_t key[CM_AUTH_KEY_LEN], const void *aad, size_t aadlen, const uint8_t *in,
	     size_t inlen, uint8_t **out, size_t *outlen)
{
	EVP_CIPHER_CTX *c;
	size_t n;
	uint8_t *b;
	int l, ok;

	if (inlen < CM_AUTH_SEAL_OVERHEAD || inlen > INT_MAX || aadlen > INT_MAX)
		return -EBADMSG;
	n = inlen - CM_AUTH_SEAL_OVERHEAD;
	b = malloc(n + 1);
	if (!b)
		return -ENOMEM;
	c = EVP_CIPHER_CTX_new();
	ok = c && EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, in) == 1 &&
	     (!aadlen || EVP_DecryptUpdate(c, NULL, &l, aad, (int)aadlen) == 1) &&
	     (!n || EVP_DecryptUpdate(c, b, &l, in + NONCE, (int)n) == 1) &&
	     EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, TAG, (void *)(in + NONCE + n)) == 1 &&
	     EVP_DecryptFinal_ex(c, b + n, &l) == 1;
	EVP_CIPHER_CTX_free(c);
	if (!ok) {
		OPENSSL_cleanse(b, n + 1);
		free(b);
		return c ? -EBADMSG : -ENOMEM;
	}
	b[n] = 0;
	*out = b;
	*outlen = n;
	return 0;
}

/* ---------- keyrings ---------- */

static const char *
trim(const char *s, const char *end, const char **e)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		end--;
	*e = end;
	return s;
}

int
cm_keyring_parse(const char *text, size_t len, const char *name, uint8_t key[CM_AUTH_KEY_LEN])
{
	const char *p = text, *end = text + len;
	bool in = false;
	int rc = -ENOENT;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *e, *s = trim(p, le, &e);

		p = nl ? nl + 1 : end;
		if (s == e || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			if (e[-1] != ']' || e - s < 3)
				return -EBADMSG;
			in = (size_t)(e - s - 2) == strlen(name) &&
			     !memcmp(s + 1, name, strlen(name));
			continue;
		}
		{
			const char *eq = memchr(s, '=', (size_t)(e - s)), *ke, *ks, *ve, *vs;
			char v[CM_AUTH_KEY_B64 + 8];

			if (!eq)
				return -EBADMSG;
			ks = trim(s, eq, &ke);
			vs = trim(eq + 1, e, &ve);
			if (!in || (size_t)(ke - ks) != 3 || memcmp(ks, "key", 3))
				continue;
			if ((size_t)(ve - vs) >= sizeof(v))
				return -EBADMSG;
			memcpy(v, vs, (size_t)(ve - vs));
			v[ve - vs] = 0;
			rc = cm_auth_key_decode(v, key) ? -EBADMSG : 0;
			OPENSSL_cleanse(v, sizeof(v));
			if (rc)
				return rc;
		}
	}
	return rc;
}

int
cm_keyring_read(const char *path, const char *name, uint8_t key[CM_AUTH_KEY_LEN], char *err,
		size_t errlen)
{
	struct stat st;
	char *buf;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "keyring %s: %s", path, strerror(errno));
		return rc == -ENOENT ? -ENOENT : rc == -EACCES ? -EPERM : -EIO;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > 65536) {
		snprintf(err, errlen, "keyring %s: not a regular file of at most 64 KiB", path);
		close(fd);
		return -EBADMSG;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen, "keyring %s is readable by others (mode %03o): chmod 600 it",
			 path, (unsigned)(st.st_mode & 0777));
		close(fd);
		return -EPERM;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	n = read(fd, buf, (size_t)st.st_size);
	close(fd);
	if (n != st.st_size) {
		snprintf(err, errlen, "keyring %s: short read", path);
		free(buf);
		return -EIO;
	}
	rc = cm_keyring_parse(buf, (size_t)n, name, key);
	OPENSSL_cleanse(buf, (size_t)n);
	free(buf);
	if (rc == -ENOENT)
		snprintf(err, errlen, "keyring %s has no key for %s", path, name);
	else if (rc)
		snprintf(err, errlen,
			 "keyring %s: malformed (a line is neither [name], key = "
			 "BASE64 nor a comment)",
			 path);
	return rc;
}

int
cm_keyring_format(const char *name, const uint8_t key[CM_AUTH_KEY_LEN], char *out, size_t len)
{
	char b64[CM_AUTH_KEY_B64 + 1];
	int n;

	cm_auth_key_encode(key, b64);
	n = snprintf(out, len, "[%s]\n\tkey = %s\n", name, b64);
	OPENSSL_cleanse(b64, sizeof(b64));
	return n < 0 || (size_t)n >= len ? -ENOSPC : n;
}

int
cm_keyring_write(const char *path, const char *name, const uint8_t key[CM_AUTH_KEY_LEN])
{
	char tmp[PATH_MAX], text[CM_AUTH_NAME_MAX + CM_AUTH_KEY_B64 + 32];
	int n = cm_keyring_format(name, key, text, sizeof(text)), fd, rc = 0;

	if (n < 0)
		return n;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0600) || write(fd, text, (size_t)n) != n || fsync(fd))
		rc = -errno ? -errno : -EIO;
	if (close(fd) && !rc)
		rc = -errno;
	OPENSSL_cleanse(text, sizeof(text));
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}
