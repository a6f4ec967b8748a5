/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Entity keys and what is built from them (docs/design/auth.md): the
 * base64 form of a key, keys derived from the cluster key (the KEK, the
 * built-in entities' keys), AES-256-GCM sealing, and keyring files.
 *
 * Threading: every function is pure or touches only its own file; safe
 * from any thread. Keys are secrets: nothing here logs one, and callers
 * must not either (clear them with OPENSSL_cleanse when done where it
 * matters).
 */
#ifndef CM_AUTH_H
#define CM_AUTH_H

#include "cm/stdinc.h"

#define CM_AUTH_KEY_LEN       32
#define CM_AUTH_KEY_B64       44        /* base64 of 32 bytes, without the NUL */
#define CM_AUTH_NAME_MAX      63        /* an entity's name, without the NUL */
#define CM_AUTH_SEAL_OVERHEAD (12 + 16) /* nonce and tag around the ciphertext */

/* The entity whose key a conf with only cluster_key stands for. */
#define CM_AUTH_ADMIN         "client.admin"
#define CM_AUTH_BOOTSTRAP_OSD "client.bootstrap-osd"

/*
 * A valid entity name: "<type>.<id>", type one of client, osd, mds, mon,
 * id 1..CM_AUTH_NAME_MAX - 5 bytes of [A-Za-z0-9._-]. \return true if so.
 */
bool cm_auth_valid_name(const char *name);

/* Base64 of a key into out (CM_AUTH_KEY_B64 + 1 bytes). */
void cm_auth_key_encode(const uint8_t key[CM_AUTH_KEY_LEN], char out[CM_AUTH_KEY_B64 + 1]);

/* A key from its base64 form (surrounding blanks ignored). \return 0 or -EINVAL. */
int cm_auth_key_decode(const char *s, uint8_t key[CM_AUTH_KEY_LEN]);

/* 32 random bytes. \return 0 or -EIO. */
int cm_auth_key_random(uint8_t key[CM_AUTH_KEY_LEN]);

/*
 * HKDF-SHA256 (RFC 5869) of secret with no salt and info as the context:
 * 32 bytes. \return 0 or -EIO.
 */
int cm_auth_derive(const void *secret, size_t len, const char *info, uint8_t out[CM_AUTH_KEY_LEN]);

/* The key-encryption key the monitors seal entity keys under: HKDF(cluster_key, "cairn-kek"). */
int cm_auth_kek(const char *cluster_key, uint8_t out[CM_AUTH_KEY_LEN]);

/* A built-in entity's key from the cluster key: HKDF(cluster_key, "cairn-entity " + name). */
int cm_auth_entity_key(const char *cluster_key, const char *name, uint8_t out[CM_AUTH_KEY_LEN]);

/*
 * AES-256-GCM: *out = nonce (12 random bytes) | ciphertext | tag (16),
 * n + CM_AUTH_SEAL_OVERHEAD bytes, malloc'd (the caller frees). aad (may be
 * NULL with aadlen 0) is authenticated, not stored. \return 0, -ENOMEM,
 * -EIO.
 */
int cm_auth_seal(const uint8_t key[CM_AUTH_KEY_LEN], const void *aad, size_t aadlen, const void *pt,
		 size_t n, uint8_t **out, size_t *outlen);

/*
 * Open what cm_auth_seal made with the same key and aad: *out (malloc'd,
 * plus a NUL after its *outlen bytes) is the plaintext. \return 0,
 * -EBADMSG (too short, another key or aad, or changed), -ENOMEM.
 */
int cm_auth_open(const uint8_t key[CM_AUTH_KEY_LEN], const void *aad, size_t aadlen,
		 const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen);

/*
 * Find name's key in a keyring's text ("[name]" sections with "key = B64"
 * lines; '#' and ';' start comments). \return 0, -ENOENT (no such
 * section or it has no key), -EBADMSG (a malformed line or key).
 */
int cm_keyring_parse(const char *text, size_t len, const char *name, uint8_t key[CM_AUTH_KEY_LEN]);

/*
 * Read name's key from the keyring at path. A keyring the group or others
 * may read is refused. \return 0, -ENOENT (no file, or no entry: err says
 * which), -EPERM (mode), -EBADMSG, -EIO; err (errlen bytes) says why.
 */
int cm_keyring_read(const char *path, const char *name, uint8_t key[CM_AUTH_KEY_LEN], char *err,
		    size_t errlen);

/* The keyring text of one entity into out. \return its length, or -ENOSPC. */
int cm_keyring_format(const char *name, const uint8_t key[CM_AUTH_KEY_LEN], char *out, size_t len);

/* Write a keyring of one entity to path, mode 0600 (a temporary file renamed). \return 0 or -errno.
 */
int cm_keyring_write(const char *path, const char *name, const uint8_t key[CM_AUTH_KEY_LEN]);

#endif
