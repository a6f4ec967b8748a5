/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Identities' parsers (docs/design/auth.md): byte 0 picks
 *   0  a caps string (cm_caps_parse): what parses formats to a canonical
 *      text that parses again to the same text, and the checks run on it
 *   1  a keyring file's text (cm_keyring_parse)
 *   2  a key's base64 form (cm_auth_key_decode): what decodes encodes back
 *   3  an entity record as etcd holds it (mon_auth_decode, under a fixed KEK)
 *   4  a sealed blob (cm_auth_open: never opens without the key)
 *   5  a ticket's plaintext (sealed here with a known secret, then opened
 *      and decoded by mon_ticket_open as an OSD does)
 *   6  a set of service secrets' plaintext (sealed here, then mon_secrets_open)
 *   7  a ticket reply as a client decodes it (AuthTicketReply: session key)
 * The rest is the input.
 */
#include "cm/auth.h"
#include "cm/caps.h"
#include "mon/auth.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
caps(const char *s)
{
	struct cm_caps c, c2;
	char err[256], out[CM_CAPS_MAX * 2], out2[CM_CAPS_MAX * 2];

	if (cm_caps_parse(s, &c, err, sizeof(err)))
		return;
	if (cm_caps_format(&c, out, sizeof(out)) >= 0) {
		if (cm_caps_parse(out, &c2, err, sizeof(err)))
			abort(); /* the canonical form must parse */
		if (cm_caps_format(&c2, out2, sizeof(out2)) < 0 || strcmp(out, out2))
			abort(); /* and be a fixed point */
		cm_caps_fini(&c2);
	}
	(void)cm_caps_mon(&c, CM_CAP_RW);
	(void)cm_caps_osd(&c, "pool", "ns", CM_CAP_R, false);
	(void)cm_caps_osd(&c, "pool", "", CM_CAP_W, true);
	cm_caps_fini(&c);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t kek[CM_AUTH_KEY_LEN] = { 1, 2, 3 };
	uint8_t key[CM_AUTH_KEY_LEN];
	char *s;

	if (size < 1 || size > 8192)
		return 0;
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = 0;
	switch (data[0] % 8) {
	case 0:
		caps(s);
		break;
	case 1:
		(void)cm_keyring_parse(s, size - 1, "client.admin", key);
		break;
	case 2:
		if (cm_auth_key_decode(s, key) == 0) {
			char b[CM_AUTH_KEY_B64 + 1];
			uint8_t k2[CM_AUTH_KEY_LEN];

			cm_auth_key_encode(key, b);
			if (cm_auth_key_decode(b, k2) || memcmp(key, k2, sizeof(key)))
				abort();
		}
		break;
	case 3: {
		struct mon_auth_entry a;

		if (mon_auth_decode(kek, "client.admin", data + 1, size - 1, &a) == 0)
			mon_auth_entry_fini(&a);
		if (mon_auth_decode(NULL, "osd.x", data + 1, size - 1, &a) == 0)
			mon_auth_entry_fini(&a);
		break;
	}
	case 4: {
		uint8_t *o;
		size_t ol;

		if (cm_auth_open(kek, "a", 1, data + 1, size - 1, &o, &ol) == 0)
			abort(); /* a forgery: the fuzzer does not hold the key's ciphertexts */
		break;
	}
	case 5:
	case 6: {
		/* What only the monitors can seal: seal the input, open it as an OSD would. */
		struct mon_secrets sec = { .n = 1 };
		uint8_t *b;
		size_t bl;
		const char *aad = data[0] % 8 == 5 ? "cairn-ticket" : "cairn-rotating";

		sec.v[0].gen = 7;
		memcpy(sec.v[0].key, kek, sizeof(kek));
		if (cm_auth_seal(kek, aad, strlen(aad), data + 1, size - 1, &b, &bl) == 0) {
			if (data[0] % 8 == 5) {
				struct mon_ticket t;

				if (mon_ticket_open(&sec, 7, b, bl, &t) == 0) {
					if (!cm_auth_valid_name(t.entity))
						abort();
					mon_ticket_fini(&t);
				}
			} else {
				struct mon_secrets out;

				if (mon_secrets_open(kek, aad, b, bl, &out) == 0 &&
				    out.n > MON_AUTH_SECRETS_MAX)
					abort();
			}
			free(b);
		}
		break;
	}
	case 7: {
		Cairn__Mon__AuthTicketReply *r =
			cairn__mon__auth_ticket_reply__unpack(NULL, size - 1, data + 1);

		if (r) {
			(void)mon_ticket_session_key(kek, "client.admin", r, key);
			cairn__mon__auth_ticket_reply__free_unpacked(r, NULL);
		}
		break;
	}
	}
	free(s);
	return 0;
}
