package runtime

import (
	"crypto/rand"
	"testing"
)

// The per-call cost of encryption: sealing a call's arguments at submit
// and opening them at its attempt (256 B and 4 KiB of arguments), and what
// a task name not encrypted pays (the envelope-prefix check only). Figures
// in docs/encryption.md.
func BenchmarkCipher(b *testing.B) {
	key := make([]byte, CipherKeySize)
	rand.Read(key)
	ring, err := newKeyring(&Cipher{Keys: []CipherKey{{ID: "k1", Key: key}}, EncryptWith: "k1", Names: []string{"bench.enc"}})
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{256, 4096} {
		args := make([]byte, size)
		for i := range args {
			args[i] = 'a' + byte(i%26)
		}
		plain := string(args)
		b.Run("seal/"+itoa(size), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				t := Task{Name: "bench.enc", Tenant: "acme", Parameter: plain}
				if err := ring.sealTask(&t); err != nil {
					b.Fatal(err)
				}
			}
		})
		sealed := Task{Name: "bench.enc", Tenant: "acme", Parameter: plain}
		_ = ring.sealTask(&sealed)
		b.Run("open/"+itoa(size), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := ring.open(sealed.Name, sealed.Tenant, sealed.Parameter); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("not-encrypted/"+itoa(size), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				t := Task{Name: "bench.plain", Parameter: plain}
				if err := ring.sealTask(&t); err != nil || t.Parameter != plain {
					b.Fatal(err)
				}
			}
		})
	}
}

func itoa(n int) string {
	if n >= 1024 {
		return string(rune('0'+n/1024)) + "KiB"
	}
	return "256B"
}
