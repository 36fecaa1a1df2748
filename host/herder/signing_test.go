package herder_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/host/config"
	"github.com/sluice-io/sluice/host/herder"
	"github.com/sluice-io/sluice/host/storage"
)

func newSigner(t *testing.T, mod func(*config.InterWorker)) *herder.Signer {
	t.Helper()
	iw := config.DefaultInterWorker()
	if mod != nil {
		mod(&iw)
	}
	s, err := herder.NewSigner(iw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wantKind checks an error's kind and exact message.
func wantKind(t *testing.T, what string, err, kind error, msg string) {
	t.Helper()
	var he *herder.Error
	if !errors.As(err, &he) || !errors.Is(err, kind) || he.Message != msg {
		t.Errorf("%s: got %v (%T), want %v %q", what, err, err, kind, msg)
	}
}

// The signature is the base64 HMAC of the body bytes, as a Java worker
// computes it: RFC 4231's test case 2 for HMAC-SHA256.
func TestSignMatchesHMACVector(t *testing.T) {
	s := newSigner(t, nil)
	key := &storage.SessionKey{Key: []byte("Jefe"), Algorithm: "HmacSHA256"}
	req, err := s.Sign(key, []byte("what do ya want for nothing?"))
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24, 0x26, 0x08, 0x95, 0x75, 0xc7,
		0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27, 0x39, 0x83, 0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43}
	if req.Signature != base64.StdEncoding.EncodeToString(want) || req.Algorithm != "HmacSHA256" {
		t.Fatalf("signature %s %s", req.Algorithm, req.Signature)
	}
}

func TestSignVerify(t *testing.T) {
	s := newSigner(t, nil)
	now := time.UnixMilli(1_700_000_000_000)
	key, err := s.NewKey(now)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := s.NewKey(now)
	if len(key.Key) != 32 || key.Algorithm != "HmacSHA256" || key.CreationTimestamp != now.UnixMilli() || bytes.Equal(key.Key, other.Key) {
		t.Fatalf("keys %+v, %+v", key, other)
	}
	body := []byte(`[{"task.class":"T","n":"0"}]`)
	req, err := s.Sign(&key, body)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(&key, req); err != nil {
		t.Fatalf("round trip: %v", err)
	}

	wantKind(t, "other key", s.Verify(&other, req), herder.ErrForbidden, "Internal request contained invalid signature.")
	tampered := req
	tampered.Body = []byte(`[{"task.class":"T","n":"1"}]`)
	wantKind(t, "tampered body", s.Verify(&key, tampered), herder.ErrForbidden, "Internal request contained invalid signature.")
	wantKind(t, "no headers", s.Verify(&key, herder.InternalRequest{Body: body}), herder.ErrBadRequest, "Internal request missing required signature")
	wantKind(t, "no algorithm", s.Verify(&key, herder.InternalRequest{Body: body, Signature: req.Signature}), herder.ErrBadRequest, "Internal request missing required signature")
	wantKind(t, "no signature", s.Verify(&key, herder.InternalRequest{Body: body, Algorithm: "HmacSHA256"}), herder.ErrBadRequest, "Internal request missing required signature")
	disallowed := "This worker does not support the 'HmacSHA512' key signing algorithm used by other workers. " +
		"This worker is currently configured to use: [HmacSHA256]. " +
		"Check that all workers' configuration files permit the same set of signature algorithms, and correct any misconfigured worker and restart it."
	wantKind(t, "disallowed algorithm", s.Verify(&key, herder.InternalRequest{Body: body, Signature: req.Signature, Algorithm: "HmacSHA512"}), herder.ErrBadRequest, disallowed)
	if err := s.Verify(&key, herder.InternalRequest{Body: body, Signature: req.Signature, Algorithm: "HmacNope"}); !errors.Is(err, herder.ErrBadRequest) || !strings.Contains(err.Error(), "'HmacNope'") {
		t.Errorf("unknown algorithm: %v", err)
	}
	if err := s.Verify(&key, herder.InternalRequest{Body: body, Signature: "not base64!", Algorithm: "HmacSHA256"}); !errors.Is(err, herder.ErrBadRequest) || !strings.Contains(err.Error(), "X-Connect-Authorization") {
		t.Errorf("bad base64: %v", err)
	}
	// A signature that is base64 but wrong, as Kafka's integration test sends.
	wantKind(t, "wrong signature", s.Verify(&key, herder.InternalRequest{Body: body, Signature: "S2Fma2Flc3F1ZQ==", Algorithm: "HmacSHA256"}), herder.ErrForbidden, "Internal request contained invalid signature.")
	if err := s.Verify(nil, req); !errors.Is(err, herder.ErrUnavailable) || !strings.Contains(err.Error(), "session key") {
		t.Errorf("no key yet: %v", err)
	}
	if _, err := s.Sign(nil, body); !errors.Is(err, herder.ErrUnavailable) {
		t.Errorf("sign without a key: %v", err)
	}
}

// A worker verifies every algorithm of its list and signs with its own.
func TestSignVerifyOtherAlgorithms(t *testing.T) {
	sha512 := newSigner(t, func(iw *config.InterWorker) {
		iw.KeyAlgorithm, iw.SignatureAlgorithm = "HmacSHA512", "HmacSHA512"
		iw.VerificationAlgorithms = []string{"HmacSHA256", "HmacSHA512"}
	})
	sha256 := newSigner(t, nil)
	key, err := sha512.NewKey(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(key.Key) != 64 || key.Algorithm != "HmacSHA512" {
		t.Fatalf("key %d bytes, %s", len(key.Key), key.Algorithm)
	}
	body := []byte("[]")
	r512, _ := sha512.Sign(&key, body)
	r256, _ := sha256.Sign(&key, body)
	if r512.Algorithm != "HmacSHA512" || len(r512.Signature) <= len(r256.Signature) {
		t.Fatalf("signatures %+v / %+v", r512, r256)
	}
	for _, r := range []herder.InternalRequest{r512, r256} {
		if err := sha512.Verify(&key, r); err != nil {
			t.Errorf("%s: %v", r.Algorithm, err)
		}
	}
	if err := sha256.Verify(&key, r512); !errors.Is(err, herder.ErrBadRequest) {
		t.Errorf("HmacSHA512 accepted by a worker allowing only HmacSHA256: %v", err)
	}
	small := newSigner(t, func(iw *config.InterWorker) { iw.KeyBits = 128 })
	if k, _ := small.NewKey(time.Now()); len(k.Key) != 16 {
		t.Fatalf("inter.worker.key.size 128: %d bytes", len(k.Key))
	}
}

// The leader replaces a key that is missing, ttl old, or of another
// algorithm or size than its settings make.
func TestKeyRotationDecision(t *testing.T) {
	s := newSigner(t, func(iw *config.InterWorker) { iw.KeyTTL = time.Hour })
	created := time.UnixMilli(1_700_000_000_000)
	key, _ := s.NewKey(created)
	if reason, _ := s.Rotation(nil, created); reason == "" {
		t.Fatal("no key: not replaced")
	}
	for _, c := range []struct {
		at       time.Duration
		rotate   bool
		leftWant time.Duration
	}{
		{0, false, time.Hour},
		{59 * time.Minute, false, time.Minute},
		{time.Hour - time.Millisecond, false, time.Millisecond},
		{time.Hour, true, 0},
		{3 * time.Hour, true, 0},
	} {
		reason, left := s.Rotation(&key, created.Add(c.at))
		if (reason != "") != c.rotate || left != c.leftWant {
			t.Errorf("at +%s: reason %q, left %s; want rotate %v, left %s", c.at, reason, left, c.rotate, c.leftWant)
		}
	}
	other := key
	other.Algorithm = "HmacSHA1"
	if reason, _ := s.Rotation(&other, created); !strings.Contains(reason, "algorithm") {
		t.Errorf("other algorithm: %q", reason)
	}
	short := key
	short.Key = short.Key[:16]
	if reason, _ := s.Rotation(&short, created); !strings.Contains(reason, "size") {
		t.Errorf("other size: %q", reason)
	}
	zero := newSigner(t, func(iw *config.InterWorker) { iw.KeyTTL = 0 })
	if reason, _ := zero.Rotation(&key, created); reason == "" {
		t.Error("ttl 0: a key is never fresh")
	}
}

func TestNewSignerRefusesBadSettings(t *testing.T) {
	iw := config.DefaultInterWorker()
	iw.SignatureAlgorithm = "HmacSHA384"
	if _, err := herder.NewSigner(iw); err == nil || !strings.Contains(err.Error(), "inter.worker.verification.algorithms") {
		t.Fatalf("signature algorithm outside the verification list: %v", err)
	}
	iw = config.DefaultInterWorker()
	iw.KeyAlgorithm = "DES"
	if _, err := herder.NewSigner(iw); err == nil || !strings.Contains(err.Error(), "inter.worker.key.generation.algorithm") {
		t.Fatalf("unknown key algorithm: %v", err)
	}
}
