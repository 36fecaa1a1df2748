package rest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/host/rest/resttest"
)

func TestOptionsValidation(t *testing.T) {
	for name, tc := range map[string]struct {
		opts Options
		errs []string
	}{
		"bad scheme":        {Options{Listeners: []string{"ftp://:21"}}, []string{`listeners: listener "ftp://:21": protocol must be http or https`}},
		"no port":           {Options{Listeners: []string{"http://localhost"}}, []string{`listener "http://localhost": must be protocol://host:port`}},
		"bad port":          {Options{Listeners: []string{"http://:99999"}}, []string{`invalid port "99999"`}},
		"path":              {Options{Listeners: []string{"http://:8083/api"}}, []string{"must be protocol://host:port"}},
		"https without tls": {Options{Listeners: []string{"https://:8443"}}, []string{"an https listener needs a certificate and a key file"}},
		"bad admin":         {Options{AdminListeners: []string{"nope"}}, []string{"admin.listeners: "}},
		"bad method":        {Options{AllowOrigin: "*", AllowMethods: "GET,P OST"}, []string{`"P OST" is not an HTTP method`}},
		"negative":          {Options{RequestTimeout: -1, MaxBodyBytes: -1}, []string{"request timeout -1ns is negative", "max body size -1 is negative"}},
		"all at once": {Options{Listeners: []string{"ftp://:1", "http://x"}, RequestTimeout: -1},
			[]string{"protocol must be http or https", `listener "http://x"`, "request timeout"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(resttest.New(), mustRegistry(t), tc.opts)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, want := range tc.errs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
	cfg, err := Options{Listeners: []string{"HTTP://[::1]:0", "http://:8083"}}.validate()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.main[0].addr != "[::1]:0" || cfg.main[1].addr != ":8083" || cfg.timeout != DefaultRequestTimeout || cfg.maxBody != DefaultMaxBodyBytes || !cfg.adminOn || cfg.adminOwn {
		t.Fatalf("validated %+v", cfg)
	}
}

func TestOptionsFromWorkerConfig(t *testing.T) {
	o, err := OptionsFromWorkerConfig(map[string]string{
		"listeners":                               "http://:8083, https://:8443",
		"admin.listeners":                         "",
		"access.control.allow.origin":             "*",
		"access.control.allow.methods":            "GET,PUT",
		"ssl.keystore.location":                   "/ignored.pem",
		"listeners.https.ssl.keystore.type":       "PEM",
		"listeners.https.ssl.keystore.location":   "/etc/sluice/rest.pem",
		"listeners.https.ssl.truststore.type":     "PEM",
		"listeners.https.ssl.truststore.location": "/etc/sluice/ca.pem",
		"listeners.https.ssl.client.auth":         "required",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		Listeners: []string{"http://:8083", "https://:8443"}, AdminListeners: []string{},
		AllowOrigin: "*", AllowMethods: "GET,PUT",
		TLS: TLSOptions{CertFile: "/etc/sluice/rest.pem", KeyFile: "/etc/sluice/rest.pem", ClientCAFile: "/etc/sluice/ca.pem", ClientAuth: "required"},
	}
	if !reflect.DeepEqual(o, want) {
		t.Fatalf("got  %+v\nwant %+v", o, want)
	}
	o, err = OptionsFromWorkerConfig(map[string]string{})
	if err != nil || o.Listeners != nil || o.AdminListeners != nil {
		t.Fatalf("empty config: %+v %v", o, err)
	}
	if _, err := OptionsFromWorkerConfig(map[string]string{"ssl.keystore.location": "/x.jks"}); err == nil || !strings.Contains(err.Error(), "PEM") {
		t.Fatalf("JKS keystore: %v", err)
	}
}

// writeCert writes a self-signed certificate and key for 127.0.0.1.
func writeCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sluice-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// One PEM file with both, as a Kafka PEM keystore.
	pemFile := filepath.Join(dir, "rest.pem")
	data := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})...)
	if err := os.WriteFile(pemFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return pemFile, pemFile, pool
}

func TestHTTPSListener(t *testing.T) {
	certFile, keyFile, pool := writeCert(t)
	e := newEnv(t, Options{
		Listeners: []string{"https://127.0.0.1:0", "http://127.0.0.1:0"},
		TLS:       TLSOptions{CertFile: certFile, KeyFile: keyFile},
	})
	addrs := e.srv.Addrs()
	if len(addrs) != 2 || !strings.HasPrefix(addrs[0], "https://127.0.0.1:") || !strings.HasPrefix(addrs[1], "http://127.0.0.1:") {
		t.Fatalf("addrs %v", addrs)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	doURL(t, client, "GET", addrs[0]+"/connectors", "", nil).expect(t, 200, `[]`)
	r := doURL(t, client, "POST", addrs[0]+"/connectors", `{"name":"s","config":`+sourceConfig+`}`, nil)
	r.expect(t, 201, "")
	if loc := r.header.Get("Location"); loc != addrs[0]+"/connectors/s" {
		t.Fatalf("Location over https: %q", loc)
	}
	doURL(t, http.DefaultClient, "GET", addrs[1]+"/connectors", "", nil).expect(t, 200, `["s"]`)
}

func TestStartFailsOnBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srv, err := New(resttest.New(), mustRegistry(t), Options{Listeners: []string{"http://127.0.0.1:0", "http://" + ln.Addr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err == nil || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("Start on a busy port: %v", err)
	}
	if len(srv.Addrs()) != 0 {
		t.Fatalf("addrs after a failed start: %v", srv.Addrs())
	}
}
