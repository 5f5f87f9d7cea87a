/*
 * sha256.c: the SHA-256 compression function, in portable C and on the
 * x86 SHA extensions (SHA-NI).
 *
 * The SHA-NI version is compiled for those instructions alone (a target
 * attribute on the one function), so the rest of the build keeps its
 * flags and the program still runs on processors without them: crypto.c
 * calls it only after sha256_shani_available said yes.
 */
#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "sha256.h"

/* The 64 round constants (FIPS 180-4, 4.2.2). */
static const uint32_t sha256_k[64] __attribute__((aligned(16))) = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5,
	0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
	0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
	0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5,
	0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t
sha256_rotr(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static uint32_t
sha256_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/*
 * Ch and Maj of FIPS 180-4 4.1.2, in fewer operations: Ch picks y's bit
 * where x has a 1 and z's elsewhere; Maj is the bit most of x, y, z have.
 */
#define SHA256_CH(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define SHA256_MAJ(x, y, z) (((x) & (y)) | ((z) & ((x) | (y))))
#define SHA256_S0(x) (sha256_rotr(x, 2) ^ sha256_rotr(x, 13) ^ \
	sha256_rotr(x, 22))
#define SHA256_S1(x) (sha256_rotr(x, 6) ^ sha256_rotr(x, 11) ^ \
	sha256_rotr(x, 25))
#define SHA256_s0(x) (sha256_rotr(x, 7) ^ sha256_rotr(x, 18) ^ ((x) >> 3))
#define SHA256_s1(x) (sha256_rotr(x, 17) ^ sha256_rotr(x, 19) ^ ((x) >> 10))

/*
 * Round t on working variables named a to h in this round's roles: the
 * new e is d + T1 and the new a is T1 + T2, and instead of every
 * variable moving down one, the next round names them one role further
 * on, so eight rounds bring the names back where they were.
 */
#define SHA256_ROUND(a, b, c, d, e, f, g, h, t) do {			\
	uint32_t t1_ = (h) + SHA256_S1(e) + SHA256_CH(e, f, g) +	\
	    sha256_k[t] + w[t];						\
	(d) += t1_;							\
	(h) = t1_ + SHA256_S0(a) + SHA256_MAJ(a, b, c);			\
} while (0)

/* FIPS 180-4, 6.2.2, one block at a time. */
void
sha256_blocks_portable(uint32_t state[8], const uint8_t *p, size_t n)
{
	uint32_t w[64], a, b, c, d, e, f, g, h;
	size_t t;

	for (; n > 0; n--, p += SHA256_BLOCK) {
		for (t = 0; t < 16; t++)
			w[t] = sha256_be32(p + 4 * t);
		for (t = 16; t < 64; t++)
			w[t] = SHA256_s1(w[t - 2]) + w[t - 7] +
			    SHA256_s0(w[t - 15]) + w[t - 16];
		a = state[0];
		b = state[1];
		c = state[2];
		d = state[3];
		e = state[4];
		f = state[5];
		g = state[6];
		h = state[7];
		for (t = 0; t < 64; t += 8) {
			SHA256_ROUND(a, b, c, d, e, f, g, h, t);
			SHA256_ROUND(h, a, b, c, d, e, f, g, t + 1);
			SHA256_ROUND(g, h, a, b, c, d, e, f, t + 2);
			SHA256_ROUND(f, g, h, a, b, c, d, e, t + 3);
			SHA256_ROUND(e, f, g, h, a, b, c, d, t + 4);
			SHA256_ROUND(d, e, f, g, h, a, b, c, t + 5);
			SHA256_ROUND(c, d, e, f, g, h, a, b, t + 6);
			SHA256_ROUND(b, c, d, e, f, g, h, a, t + 7);
		}
		state[0] += a;
		state[1] += b;
		state[2] += c;
		state[3] += d;
		state[4] += e;
		state[5] += f;
		state[6] += g;
		state[7] += h;
	}
}

#if defined(__x86_64__) || defined(__i386__)

int
sha256_shani_available(void)
{
	unsigned a, b, c, d;

	/* Leaf 1: ECX bit 9 SSSE3, bit 19 SSE4.1; leaf 7: EBX bit 29 SHA. */
	if (!__get_cpuid(1, &a, &b, &c, &d) ||
	    (c & (1u << 9)) == 0 || (c & (1u << 19)) == 0)
		return 0;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return 0;
	return (b & (1u << 29)) != 0;
}

/*
 * The instructions keep the working variables in two registers, in 32-bit
 * lanes from the highest down: ABEF = (a, b, e, f) and CDGH = (c, d, g,
 * h).  sha256rnds2 runs two rounds on them with the low two lanes of its
 * third operand as W[t] + K[t] and W[t+1] + K[t+1], and returns the new
 * ABEF; the new CDGH is the old ABEF.  The schedule W[t] = s1(W[t-2]) +
 * W[t-7] + s0(W[t-15]) + W[t-16] is made four words at a time: msg1
 * gives W[t-16] + s0(W[t-15]), the W[t-7] are added, and msg2 adds
 * s1(W[t-2]), whose last two are the first two it makes.
 */

/*
 * Four rounds, from W[t..t+3] in m and the constants from K[t].  The
 * first two leave the new ABEF in cdgh, and abef, the old ABEF, is then
 * the CDGH the next two start from: they leave ABEF and CDGH where they
 * were.
 */
#define SHA256_QUAD(m, t) do {						\
	wk = _mm_add_epi32(m, _mm_load_si128(				\
	    (const __m128i *)(const void *)(sha256_k + (t))));		\
	cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);			\
	wk = _mm_shuffle_epi32(wk, 0x0e);				\
	abef = _mm_sha256rnds2_epu32(abef, cdgh, wk);			\
} while (0)

/* m0 (W[t-16..t-13]) becomes W[t..t+3]; m1 to m3 hold the twelve after. */
#define SHA256_NEXT(m0, m1, m2, m3)					\
	((m0) = _mm_sha256msg2_epu32(_mm_add_epi32(			\
	    _mm_sha256msg1_epu32(m0, m1), _mm_alignr_epi8(m3, m2, 4)), m3))

/* W[4i..4i+3] of the block at p; the words are big-endian. */
#define SHA256_LOAD(i)							\
	_mm_shuffle_epi8(_mm_loadu_si128(				\
	    (const __m128i *)(const void *)(p + 16 * (i))), swap)

__attribute__((target("sha,sse4.1,ssse3")))
void
sha256_blocks_shani(uint32_t state[8], const uint8_t *p, size_t n)
{
	/* Reverses the bytes of each 32-bit lane. */
	const __m128i swap = _mm_set_epi8(12, 13, 14, 15, 8, 9, 10, 11,
	    4, 5, 6, 7, 0, 1, 2, 3);
	__m128i abef, cdgh, abef0, cdgh0, m0, m1, m2, m3, wk;
	uint32_t lane[4];
	int t;

	abef = _mm_set_epi32((int)state[0], (int)state[1], (int)state[4],
	    (int)state[5]);
	cdgh = _mm_set_epi32((int)state[2], (int)state[3], (int)state[6],
	    (int)state[7]);
	for (; n > 0; n--, p += SHA256_BLOCK) {
		abef0 = abef;
		cdgh0 = cdgh;
		m0 = SHA256_LOAD(0);
		SHA256_QUAD(m0, 0);
		m1 = SHA256_LOAD(1);
		SHA256_QUAD(m1, 4);
		m2 = SHA256_LOAD(2);
		SHA256_QUAD(m2, 8);
		m3 = SHA256_LOAD(3);
		SHA256_QUAD(m3, 12);
		for (t = 16; t < 64; t += 16) {
			SHA256_NEXT(m0, m1, m2, m3);
			SHA256_QUAD(m0, t);
			SHA256_NEXT(m1, m2, m3, m0);
			SHA256_QUAD(m1, t + 4);
			SHA256_NEXT(m2, m3, m0, m1);
			SHA256_QUAD(m2, t + 8);
			SHA256_NEXT(m3, m0, m1, m2);
			SHA256_QUAD(m3, t + 12);
		}
		abef = _mm_add_epi32(abef, abef0);
		cdgh = _mm_add_epi32(cdgh, cdgh0);
	}
	_mm_storeu_si128((__m128i *)(void *)lane, abef);
	state[0] = lane[3];
	state[1] = lane[2];
	state[4] = lane[1];
	state[5] = lane[0];
	_mm_storeu_si128((__m128i *)(void *)lane, cdgh);
	state[2] = lane[3];
	state[3] = lane[2];
	state[6] = lane[1];
	state[7] = lane[0];
}

#else

int
sha256_shani_available(void)
{
	return 0;
}

#endif
