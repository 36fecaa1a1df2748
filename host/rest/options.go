package rest

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	workerconfig "github.com/sluice-io/sluice/host/config"

	"github.com/hashicorp/go-hclog"
)

// Defaults, as Kafka Connect's.
const (
	DefaultListener       = "http://:8083"
	DefaultRequestTimeout = 90 * time.Second // DEFAULT_REST_REQUEST_TIMEOUT_MS
	DefaultHealthTimeout  = 10 * time.Second // health check timeout
	// DefaultMaxBodyBytes bounds a request body. Kafka Connect sets no bound;
	// 32 MiB is far above any connector config or offsets batch seen in
	// practice and keeps one request from exhausting the worker's memory.
	DefaultMaxBodyBytes = 32 << 20
	// Jetty's CrossOriginFilter defaults, which Kafka Connect inherits.
	defaultCORSMethods = "GET,POST,HEAD"
	defaultCORSHeaders = "X-Requested-With,Content-Type,Accept,Origin"
)

// Options configure the REST server. The zero value serves
// http://:8083 with Kafka Connect's defaults.
type Options struct {
	// Listeners are URLs "http://host:port" or "https://host:port"; an empty
	// host binds every interface, port 0 picks a free port (see
	// Server.Addrs). Default: http://:8083.
	Listeners []string
	// AdminListeners is admin.listeners: nil serves the admin endpoints
	// (/admin/loggers) on Listeners; an empty, non-nil list disables them;
	// otherwise they are served only on these listeners, and the regular
	// listeners answer 404 for them.
	AdminListeners []string
	// TLS configures every https listener.
	TLS TLSOptions
	// AllowOrigin is access.control.allow.origin: a comma-separated list of
	// origins ("*" for any; "*" inside an origin is a wildcard). Empty
	// disables CORS.
	AllowOrigin string
	// AllowMethods is access.control.allow.methods, comma-separated; empty
	// means GET,POST,HEAD, as Jetty's CrossOriginFilter.
	AllowMethods string
	// ResponseHeaders is response.http.headers.config: header rules applied
	// to every response (config.ParseResponseHeaders).
	ResponseHeaders string
	// RequestTimeout bounds every herder call; at the deadline the request is
	// answered 500 "Request timed out". Default 90 s.
	RequestTimeout time.Duration
	// HealthTimeout bounds GET /health. Default 10 s.
	HealthTimeout time.Duration
	// MaxBodyBytes bounds a request body; a larger one is answered 400.
	// Default 32 MiB.
	MaxBodyBytes int64
	// Logger receives the access log and server errors; silent when nil.
	Logger hclog.Logger
}

// TLSOptions configure https listeners with PEM files.
type TLSOptions struct {
	// CertFile holds the certificate chain; KeyFile the private key. They
	// may name the same file (a PEM keystore holding both).
	CertFile, KeyFile string
	// ClientCAFile holds the CA certificates client certificates must chain
	// to; needed when ClientAuth is "requested" or "required".
	ClientCAFile string
	// ClientAuth is ssl.client.auth: "none" (default), "requested" or
	// "required".
	ClientAuth string
}

// listener is one parsed listener URL.
type listener struct {
	scheme string // http or https
	addr   string // host:port for net.Listen
}

// config is Options validated and defaulted.
type config struct {
	main, admin  []listener
	adminOn      bool // admin endpoints served at all
	adminOwn     bool // on their own listeners
	tls          *tls.Config
	allowOrigins []string
	allowMethods []string
	headers      []workerconfig.HeaderRule
	timeout      time.Duration
	healthTO     time.Duration
	maxBody      int64
	log          hclog.Logger
}

// validate checks every option once and reports every problem.
func (o Options) validate() (*config, error) {
	c := &config{
		timeout:  o.RequestTimeout,
		healthTO: o.HealthTimeout,
		maxBody:  o.MaxBodyBytes,
		log:      o.Logger,
	}
	var errs []error
	if c.timeout == 0 {
		c.timeout = DefaultRequestTimeout
	}
	if c.healthTO == 0 {
		c.healthTO = DefaultHealthTimeout
	}
	if c.maxBody == 0 {
		c.maxBody = DefaultMaxBodyBytes
	}
	if c.timeout < 0 {
		errs = append(errs, fmt.Errorf("request timeout %v is negative", c.timeout))
	}
	if c.healthTO < 0 {
		errs = append(errs, fmt.Errorf("health timeout %v is negative", c.healthTO))
	}
	if c.maxBody < 0 {
		errs = append(errs, fmt.Errorf("max body size %d is negative", c.maxBody))
	}
	if c.log == nil {
		c.log = hclog.NewNullLogger()
	}

	mains := o.Listeners
	if len(mains) == 0 {
		mains = []string{DefaultListener}
	}
	needTLS := false
	parse := func(what string, urls []string) []listener {
		var out []listener
		for _, u := range urls {
			l, err := parseListener(u)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", what, err))
				continue
			}
			needTLS = needTLS || l.scheme == "https"
			out = append(out, l)
		}
		return out
	}
	c.main = parse("listeners", mains)
	switch {
	case o.AdminListeners == nil:
		c.adminOn = true
	case len(o.AdminListeners) > 0:
		c.adminOn, c.adminOwn = true, true
		c.admin = parse("admin.listeners", o.AdminListeners)
	}
	if needTLS {
		t, err := o.TLS.load()
		if err != nil {
			errs = append(errs, err)
		}
		c.tls = t
	}

	if origins := splitList(o.AllowOrigin); len(origins) > 0 {
		c.allowOrigins = origins
		methods := splitList(o.AllowMethods)
		if len(methods) == 0 {
			methods = splitList(defaultCORSMethods)
		}
		for i, m := range methods {
			if !isToken(m) {
				errs = append(errs, fmt.Errorf("access.control.allow.methods: %q is not an HTTP method", m))
			}
			methods[i] = strings.ToUpper(m)
		}
		c.allowMethods = methods
	}
	rules, err := workerconfig.ParseResponseHeaders(o.ResponseHeaders)
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", workerconfig.ResponseHTTPHeaders, err))
	}
	c.headers = rules
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("rest options: %w", err)
	}
	return c, nil
}

// parseListener reads "scheme://host:port" as Kafka's listeners do: scheme
// http or https (any case), host optional (every interface), IPv6 in
// brackets, port required.
func parseListener(s string) (listener, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return listener{}, fmt.Errorf("listener %q: %w", s, err)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return listener{}, fmt.Errorf("listener %q: protocol must be http or https", s)
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.User != nil {
		return listener{}, fmt.Errorf("listener %q: must be protocol://host:port", s)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return listener{}, fmt.Errorf("listener %q: must be protocol://host:port: %w", s, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return listener{}, fmt.Errorf("listener %q: invalid port %q", s, port)
	}
	return listener{scheme: scheme, addr: net.JoinHostPort(host, port)}, nil
}

func (t TLSOptions) load() (*tls.Config, error) {
	if t.CertFile == "" || t.KeyFile == "" {
		return nil, errors.New("an https listener needs a certificate and a key file")
	}
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("load https certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	switch strings.ToLower(t.ClientAuth) {
	case "", "none":
		return cfg, nil
	case "requested":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "required":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, fmt.Errorf("ssl.client.auth %q: must be none, requested or required", t.ClientAuth)
	}
	if t.ClientCAFile == "" {
		return nil, fmt.Errorf("ssl.client.auth %s needs a truststore of client CAs", t.ClientAuth)
	}
	pem, err := os.ReadFile(t.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("read client CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("client CA file %s holds no PEM certificate", t.ClientCAFile)
	}
	cfg.ClientCAs = pool
	return cfg, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// isToken reports whether s is an RFC 7230 token (an HTTP method name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= ' ' || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) {
			return false
		}
	}
	return true
}

// OptionsFromWorkerConfig reads the REST settings of a worker config under
// Kafka Connect's names: listeners, admin.listeners (present but empty
// disables the admin endpoints), access.control.allow.origin,
// access.control.allow.methods, and for https the PEM keystore and
// truststore: ssl.keystore.type=PEM with ssl.keystore.location (key and
// certificate chain in one file), ssl.truststore.location and
// ssl.client.auth. As in Kafka, when any listeners.https.* setting is
// present only those are used for https, else the worker's ssl.* ones.
// Timeouts, body limit and logger keep their defaults.
func OptionsFromWorkerConfig(props map[string]string) (Options, error) {
	var o Options
	if v, ok := props["listeners"]; ok {
		o.Listeners = splitList(v)
	}
	if v, ok := props["admin.listeners"]; ok {
		o.AdminListeners = splitList(v)
		if o.AdminListeners == nil {
			o.AdminListeners = []string{}
		}
	}
	o.AllowOrigin = props["access.control.allow.origin"]
	o.AllowMethods = props["access.control.allow.methods"]
	o.ResponseHeaders = props[workerconfig.ResponseHTTPHeaders]

	ssl := map[string]string{}
	for k, v := range props {
		if rest, ok := strings.CutPrefix(k, "listeners.https."); ok {
			ssl[rest] = v
		}
	}
	if len(ssl) == 0 {
		for k, v := range props {
			if strings.HasPrefix(k, "ssl.") {
				ssl[k] = v
			}
		}
	}
	if loc := ssl["ssl.keystore.location"]; loc != "" {
		if typ := ssl["ssl.keystore.type"]; !strings.EqualFold(typ, "PEM") {
			if typ == "" {
				typ = "JKS (the default)"
			}
			return o, fmt.Errorf("ssl.keystore.type %s is not supported: Sluice reads PEM keystores (ssl.keystore.type=PEM)", typ)
		}
		if ssl["ssl.key.password"] != "" {
			return o, errors.New("ssl.key.password is not supported: use an unencrypted PEM key")
		}
		o.TLS.CertFile, o.TLS.KeyFile = loc, loc
	}
	if loc := ssl["ssl.truststore.location"]; loc != "" {
		if typ := ssl["ssl.truststore.type"]; !strings.EqualFold(typ, "PEM") {
			return o, fmt.Errorf("ssl.truststore.type %q is not supported: Sluice reads PEM truststores (ssl.truststore.type=PEM)", typ)
		}
		o.TLS.ClientCAFile = loc
	}
	o.TLS.ClientAuth = ssl["ssl.client.auth"]
	return o, nil
}
