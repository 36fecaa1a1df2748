package config

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"
	"math"
	"slices"
	"strings"
	"time"

	def "github.com/sluice-io/sluice/pluginsdk/config"
)

// KIP-507: the settings of signed requests between distributed workers
// (the internal POST /connectors/{c}/tasks). They matter only while the
// group runs the sessioned protocol; the leader distributes the session key
// on the config topic, every worker signs and verifies with it.
const (
	InterWorkerKeyGenerationAlgorithm = "inter.worker.key.generation.algorithm"
	InterWorkerKeySize                = "inter.worker.key.size"
	InterWorkerKeyTTLMs               = "inter.worker.key.ttl.ms"
	InterWorkerSignatureAlgorithm     = "inter.worker.signature.algorithm"
	InterWorkerVerificationAlgorithms = "inter.worker.verification.algorithms"
)

// DefaultMAC is Kafka Connect's default key generation, signature and
// verification algorithm.
const DefaultMAC = "HmacSHA256"

// macAlgorithm is an HMAC a worker can sign with, under its JCA name, with
// the key size the JVM's key generator uses when inter.worker.key.size is
// null (so a Java leader and a Sluice leader make keys of the same length).
type macAlgorithm struct {
	name    string
	hash    func() hash.Hash
	keyBits int
}

var macAlgorithms = []macAlgorithm{
	{"HmacSHA1", sha1.New, 512},
	{"HmacSHA224", sha256.New224, 224},
	{"HmacSHA256", sha256.New, 256},
	{"HmacSHA384", sha512.New384, 384},
	{"HmacSHA512", sha512.New, 512},
}

// lookupMAC finds an algorithm; JCA names are case-insensitive.
func lookupMAC(name string) (macAlgorithm, bool) {
	for _, a := range macAlgorithms {
		if strings.EqualFold(a.name, name) {
			return a, true
		}
	}
	return macAlgorithm{}, false
}

// MAC returns the hash of an HMAC algorithm by its JCA name (HmacSHA256...),
// for crypto/hmac; false when this worker does not support it.
func MAC(algorithm string) (func() hash.Hash, bool) {
	a, ok := lookupMAC(algorithm)
	return a.hash, ok
}

// MACKeyBits is the size of a key generated for algorithm when no
// inter.worker.key.size is given; 0 for an unsupported algorithm.
func MACKeyBits(algorithm string) int {
	a, _ := lookupMAC(algorithm)
	return a.keyBits
}

// MACAlgorithms lists the algorithms this worker supports.
func MACAlgorithms() []string {
	out := make([]string, len(macAlgorithms))
	for i, a := range macAlgorithms {
		out[i] = a.name
	}
	return out
}

func unsupportedMAC(name string) string {
	return fmt.Sprintf("Algorithm %s not available; this worker supports %s", name, strings.Join(MACAlgorithms(), ", "))
}

// checkMAC is the one check of an algorithm setting's value.
func checkMAC(name, algorithm string) error {
	if _, ok := lookupMAC(algorithm); !ok {
		return def.Invalid(name, algorithm, unsupportedMAC(algorithm))
	}
	return nil
}

const keySizeMsg = "Key size must be a positive multiple of 8 bits"

// checkKeyBits is the check of inter.worker.key.size (0 stands for null in
// InterWorker; the property's validator refuses an explicit 0).
func checkKeyBits(bits int) error {
	if bits < 0 || bits%8 != 0 {
		return def.Invalid(InterWorkerKeySize, bits, keySizeMsg)
	}
	return nil
}

// checkVerification is the one check of inter.worker.verification.algorithms.
func checkVerification(algorithms []string) error {
	if len(algorithms) == 0 {
		return def.Invalid(InterWorkerVerificationAlgorithms, algorithms, "At least one signature verification algorithm must be provided")
	}
	for _, a := range algorithms {
		if err := checkMAC(InterWorkerVerificationAlgorithms, a); err != nil {
			return err
		}
	}
	return nil
}

// macValidator accepts a supported algorithm name (whether it may be null
// is Required's business).
func macValidator() def.Validator {
	return def.Lambda(func(name string, v any) error {
		if s, ok := v.(string); ok {
			return checkMAC(name, s)
		}
		return nil
	}, "Any HMAC algorithm supported by the worker: "+strings.Join(MACAlgorithms(), ", "))
}

// defineInterWorker adds the five inter.worker.* keys (Kafka's
// DistributedConfig) to a distributed worker's definition.
func defineInterWorker(d *def.Def) {
	d.Define(def.Key{Name: InterWorkerKeyGenerationAlgorithm, Type: def.String, Default: DefaultMAC, Validator: macValidator(),
		Importance: def.Low, Group: groupDistributed, Doc: "Algorithm of the session keys the leader generates for signing requests between workers (sessioned protocol)."})
	d.Define(def.Key{Name: InterWorkerKeySize, Type: def.Int, Validator: def.Lambda(func(name string, v any) error {
		n, ok := v.(int32)
		if !ok {
			return nil
		}
		if n == 0 {
			return def.Invalid(name, v, keySizeMsg)
		}
		return checkKeyBits(int(n))
	}, "null or a positive multiple of 8"),
		Importance: def.Low, Group: groupDistributed, Doc: "Size in bits of the generated session keys; null: the key generation algorithm's default size (256 bits for HmacSHA256)."})
	d.Define(def.Key{Name: InterWorkerKeyTTLMs, Type: def.Int, Default: 3600000, Validator: def.Range(0, math.MaxInt32),
		Importance: def.Low, Group: groupDistributed, Doc: "How long a session key is used, in milliseconds, before the leader writes a new one."})
	d.Define(def.Key{Name: InterWorkerSignatureAlgorithm, Type: def.String, Default: DefaultMAC, Validator: macValidator(),
		Importance: def.Low, Group: groupDistributed, Doc: "Algorithm this worker signs its requests to other workers with; it must be in " + InterWorkerVerificationAlgorithms + "."})
	d.Define(def.Key{Name: InterWorkerVerificationAlgorithms, Type: def.List, Default: DefaultMAC, Validator: def.Lambda(func(_ string, v any) error {
		if l, ok := v.([]string); ok {
			return checkVerification(l)
		}
		return nil
	}, "A list of one or more HMAC algorithms supported by the worker"),
		Importance: def.Low, Group: groupDistributed, Doc: "Algorithms this worker accepts on requests signed by other workers; must include " + InterWorkerSignatureAlgorithm + "."})
}

// InterWorker is the KIP-507 signing settings of a distributed worker.
type InterWorker struct {
	// KeyAlgorithm is inter.worker.key.generation.algorithm.
	KeyAlgorithm string
	// KeyBits is inter.worker.key.size; 0 when null (the algorithm's
	// default, MACKeyBits).
	KeyBits int
	// KeyTTL is inter.worker.key.ttl.ms.
	KeyTTL time.Duration
	// SignatureAlgorithm is inter.worker.signature.algorithm.
	SignatureAlgorithm string
	// VerificationAlgorithms is inter.worker.verification.algorithms.
	VerificationAlgorithms []string
}

// DefaultInterWorker is Kafka Connect's defaults.
func DefaultInterWorker() InterWorker {
	return InterWorker{KeyAlgorithm: DefaultMAC, KeyTTL: time.Hour, SignatureAlgorithm: DefaultMAC, VerificationAlgorithms: []string{DefaultMAC}}
}

// InterWorker returns the inter.worker.* settings of a distributed worker
// configuration.
func (w *Worker) InterWorker() InterWorker {
	iw := InterWorker{
		KeyAlgorithm:           w.String(InterWorkerKeyGenerationAlgorithm),
		KeyTTL:                 w.Millis(InterWorkerKeyTTLMs),
		SignatureAlgorithm:     w.String(InterWorkerSignatureAlgorithm),
		VerificationAlgorithms: slices.Clone(w.List(InterWorkerVerificationAlgorithms)),
	}
	if !w.IsNull(InterWorkerKeySize) {
		iw.KeyBits = w.Int(InterWorkerKeySize)
	}
	return iw
}

// KeySize is the size in bits of the keys to generate.
func (iw InterWorker) KeySize() int {
	if iw.KeyBits > 0 {
		return iw.KeyBits
	}
	return MACKeyBits(iw.KeyAlgorithm)
}

// Check validates settings built by hand (the distributed herder runs it
// on its options): each value as the property's validator does, then the
// settings together.
func (iw InterWorker) Check() error {
	errs := []error{
		checkMAC(InterWorkerKeyGenerationAlgorithm, iw.KeyAlgorithm),
		checkKeyBits(iw.KeyBits),
		checkMAC(InterWorkerSignatureAlgorithm, iw.SignatureAlgorithm),
		checkVerification(iw.VerificationAlgorithms),
	}
	if iw.KeyTTL < 0 {
		errs = append(errs, def.Invalid(InterWorkerKeyTTLMs, iw.KeyTTL.Milliseconds(), "Value must be at least 0"))
	}
	return errors.Join(append(errs, iw.crossCheck())...)
}

// crossCheck is what no single property's validator can see: the signature
// algorithm must be one the verifiers accept, or workers configured alike
// would refuse each other's requests. ParseWorker runs it after the
// properties' own validators.
func (iw InterWorker) crossCheck() error {
	if !slices.Contains(iw.VerificationAlgorithms, iw.SignatureAlgorithm) {
		return def.Invalid(InterWorkerSignatureAlgorithm, iw.SignatureAlgorithm, "Signature algorithm must be present in "+InterWorkerVerificationAlgorithms+" list")
	}
	return nil
}
