package herder

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/sluice-io/sluice/host/config"
	"github.com/sluice-io/sluice/host/storage"
)

// Signed requests between workers (KIP-507). While the group runs the
// sessioned protocol, the leader keeps a session key on the config topic
// (record session-key), rotated every inter.worker.key.ttl.ms; a worker that
// sends task configs to the leader signs the body bytes it sends with an
// HMAC of that key, and a worker that receives them checks the signature
// before anything else. The headers and messages are Kafka Connect's, so
// Java and Sluice workers can sign for each other.

// Headers of a signed request.
const (
	// HeaderSignature is the base64 HMAC of the request body.
	HeaderSignature = "X-Connect-Authorization"
	// HeaderSignatureAlgorithm names the HMAC (JCA name, e.g. HmacSHA256).
	HeaderSignatureAlgorithm = "X-Connect-Request-Signature-Algorithm"
)

// Messages of the answers to a request that fails the check.
const (
	msgMissingSignature = "Internal request missing required signature"
	msgInvalidSignature = "Internal request contained invalid signature."
	msgNoSessionKey     = "This worker has not read a session key from the config topic yet, so it cannot check the signature of internal requests; try again shortly."
)

// InternalRequest is a request of another worker as received: the body
// exactly as its bytes came, which is what the signature covers, and the
// values of the two signature headers ("" when absent).
type InternalRequest struct {
	Body      []byte
	Signature string
	Algorithm string
}

// Signer signs and checks internal requests with session keys, and makes
// and ages the keys, as one worker's inter.worker.* settings say. It holds
// no key: the key is whatever the config topic holds last.
type Signer struct {
	cfg  config.InterWorker
	rand io.Reader
}

// NewSigner checks the settings (as config.InterWorker.Check) and returns
// a Signer using crypto/rand for keys.
func NewSigner(iw config.InterWorker) (*Signer, error) {
	if err := iw.Check(); err != nil {
		return nil, fmt.Errorf("inter-worker request signing: %w", err)
	}
	iw.VerificationAlgorithms = slices.Clone(iw.VerificationAlgorithms)
	return &Signer{cfg: iw, rand: rand.Reader}, nil
}

// mac is the HMAC of body under key with the named algorithm.
func mac(algorithm string, key, body []byte) ([]byte, error) {
	h, ok := config.MAC(algorithm)
	if !ok {
		return nil, fmt.Errorf("HMAC algorithm %s not available", algorithm)
	}
	m := hmac.New(h, key)
	m.Write(body)
	return m.Sum(nil), nil
}

// Sign signs body with key and this worker's signature algorithm.
func (s *Signer) Sign(key *storage.SessionKey, body []byte) (InternalRequest, error) {
	if key == nil {
		return InternalRequest{}, errNoKeyToSign
	}
	sum, err := mac(s.cfg.SignatureAlgorithm, key.Key, body)
	if err != nil {
		return InternalRequest{}, fmt.Errorf("sign an internal request: %w", err)
	}
	return InternalRequest{Body: body, Signature: base64.StdEncoding.EncodeToString(sum), Algorithm: s.cfg.SignatureAlgorithm}, nil
}

// errNoKeyToSign stops a worker from sending task configs unsigned: it
// retries once it has read a session key.
var errNoKeyToSign = Errorf(ErrUnavailable, "no session key has been read from the config topic yet, and requests to the leader must be signed (connect.protocol sessioned); retrying once the leader has written one")

// Verify checks a request against key (the last one read; nil when none)
// in Kafka Connect's order: a missing signature and an algorithm this
// worker does not accept are 400, a key not read yet is 503, a signature
// that does not match is 403. MACs are compared in constant time.
func (s *Signer) Verify(key *storage.SessionKey, r InternalRequest) error {
	if r.Signature == "" || r.Algorithm == "" {
		return Errorf(ErrBadRequest, msgMissingSignature)
	}
	if !slices.Contains(s.cfg.VerificationAlgorithms, r.Algorithm) {
		return Errorf(ErrBadRequest, "This worker does not support the '%s' key signing algorithm used by other workers. "+
			"This worker is currently configured to use: [%s]. "+
			"Check that all workers' configuration files permit the same set of signature algorithms, and correct any misconfigured worker and restart it.",
			r.Algorithm, strings.Join(s.cfg.VerificationAlgorithms, ", "))
	}
	got, err := base64.StdEncoding.DecodeString(r.Signature)
	if err != nil {
		return Errorf(ErrBadRequest, "Invalid %s header: %v", HeaderSignature, err)
	}
	if key == nil {
		return Errorf(ErrUnavailable, msgNoSessionKey)
	}
	want, err := mac(r.Algorithm, key.Key, r.Body)
	if err != nil {
		return err
	}
	if !hmac.Equal(got, want) {
		return Errorf(ErrForbidden, msgInvalidSignature)
	}
	return nil
}

// NewKey makes a session key of the configured algorithm and size from
// crypto/rand, created at now.
func (s *Signer) NewKey(now time.Time) (storage.SessionKey, error) {
	b := make([]byte, s.cfg.KeySize()/8)
	if _, err := io.ReadFull(s.rand, b); err != nil {
		return storage.SessionKey{}, fmt.Errorf("generate a session key: %w", err)
	}
	return storage.SessionKey{Key: b, Algorithm: s.cfg.KeyAlgorithm, CreationTimestamp: now.UnixMilli()}, nil
}

// Rotation decides, for the leader, whether key must be replaced at now:
// reason says why when it must; otherwise left is the time until it
// expires. A key is replaced when there is none, when it is
// inter.worker.key.ttl.ms old, and when its algorithm or size is not what
// this worker would generate (the settings changed).
func (s *Signer) Rotation(key *storage.SessionKey, now time.Time) (reason string, left time.Duration) {
	if key == nil {
		return "no session key has been distributed yet", 0
	}
	expiry := time.UnixMilli(key.CreationTimestamp).Add(s.cfg.KeyTTL)
	if !now.Before(expiry) {
		return "the session key expired", 0
	}
	if key.Algorithm != s.cfg.KeyAlgorithm || len(key.Key)*8 != s.cfg.KeySize() {
		return "the session key's algorithm or size differs from this worker's settings", 0
	}
	return "", expiry.Sub(now)
}
