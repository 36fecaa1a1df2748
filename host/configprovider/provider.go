package configprovider

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/sluice-io/sluice/host/config"
)

// Provider reads values for a set of keys at a path. Keys it does not have
// are absent from the answer, not an error. Errors must not quote values.
type Provider interface {
	Get(ctx context.Context, path string, keys []string) (map[string]string, error)
}

// The built-in provider classes, under Kafka's names.
const (
	FileClass      = "org.apache.kafka.common.config.provider.FileConfigProvider"
	DirectoryClass = "org.apache.kafka.common.config.provider.DirectoryConfigProvider"
	EnvVarClass    = "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
)

// Parameter names.
const (
	ParamAllowedPaths     = "allowed.paths"
	ParamAllowlistPattern = "allowlist.pattern"
)

// NewProvider builds a built-in provider from its class (full or simple
// name) and its parameters.
func NewProvider(class string, params map[string]string) (Provider, error) {
	switch strings.TrimSpace(class) {
	case FileClass, "FileConfigProvider":
		ap, err := parseAllowedPaths(params[ParamAllowedPaths])
		if err != nil {
			return nil, err
		}
		return &FileProvider{AllowedPaths: ap}, nil
	case DirectoryClass, "DirectoryConfigProvider":
		ap, err := parseAllowedPaths(params[ParamAllowedPaths])
		if err != nil {
			return nil, err
		}
		return &DirectoryProvider{AllowedPaths: ap}, nil
	case EnvVarClass, "EnvVarConfigProvider":
		p := &EnvVarProvider{}
		if pat, ok := params[ParamAllowlistPattern]; ok {
			re, err := regexp.Compile(`^(?:` + pat + `)$`)
			if err != nil {
				return nil, fmt.Errorf("invalid %s %q: %w", ParamAllowlistPattern, pat, err)
			}
			p.Allowlist = re
		}
		return p, nil
	}
	return nil, fmt.Errorf("unknown config provider class %q (built in: %s, %s, %s)", class, FileClass, DirectoryClass, EnvVarClass)
}

// parseAllowedPaths reads allowed.paths: absolute paths that exist, as
// KIP-993 requires. Empty: every path is allowed (nil).
func parseAllowedPaths(v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []string
	for p := range strings.SplitSeq(v, ",") {
		p = filepath.Clean(strings.TrimSpace(p))
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("%s: path %s is not absolute", ParamAllowedPaths, p)
		}
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%s: path %s does not exist", ParamAllowedPaths, p)
		}
		out = append(out, p)
	}
	return out, nil
}

// checkPath cleans path and checks it against allowed (nil: all allowed).
func checkPath(path string, allowed []string) (string, error) {
	if allowed == nil {
		return path, nil
	}
	clean := filepath.Clean(path)
	for _, a := range allowed {
		if clean == a || strings.HasPrefix(clean, strings.TrimSuffix(a, string(filepath.Separator))+string(filepath.Separator)) {
			return clean, nil
		}
	}
	return "", fmt.Errorf("path %s is not in %s", path, ParamAllowedPaths)
}

// FileProvider is Kafka's FileConfigProvider: the path is a .properties
// file, the keys its property names.
type FileProvider struct {
	// AllowedPaths, when not nil, are the only paths that may be read.
	AllowedPaths []string
}

// Get implements Provider.
func (p *FileProvider) Get(ctx context.Context, path string, keys []string) (map[string]string, error) {
	out := map[string]string{}
	if path == "" {
		return out, nil
	}
	clean, err := checkPath(path, p.AllowedPaths)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	props, err := config.ReadPropertiesFile(clean)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("read %s: %w", path, pe.Err)
		}
		// The parser quotes the offending text, which may be a secret.
		return nil, fmt.Errorf("%s is not a valid properties file", path)
	}
	for _, k := range keys {
		if v, ok := props[k]; ok {
			out[k] = v
		}
	}
	return out, nil
}

// DirectoryProvider is Kafka's DirectoryConfigProvider: the path is a
// directory, each key the name of a regular file directly in it, the value
// the file's content.
type DirectoryProvider struct {
	// AllowedPaths, when not nil, are the only paths that may be read.
	AllowedPaths []string
}

// Get implements Provider.
func (p *DirectoryProvider) Get(ctx context.Context, path string, keys []string) (map[string]string, error) {
	out := map[string]string{}
	if path == "" {
		return out, nil
	}
	dir, err := checkPath(path, p.AllowedPaths)
	if err != nil {
		return nil, err
	}
	if _, err := os.ReadDir(dir); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("read directory %s: %w", path, err)
	}
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Only a plain name counts: "../x" or "a/b" would leave the directory.
		if k == "" || k == "." || k == ".." || strings.ContainsRune(k, filepath.Separator) {
			continue
		}
		f := filepath.Join(dir, k)
		// Kafka follows symlinks here (Files.isRegularFile): so does Stat.
		st, err := os.Stat(f)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read %s in %s: %w", k, path, errors.Unwrap(err))
		}
		out[k] = string(b)
	}
	return out, nil
}

// EnvVarProvider is Kafka's EnvVarConfigProvider: keys are environment
// variables; there is no path.
type EnvVarProvider struct {
	// Allowlist, when set, must match a variable's whole name for it to be
	// readable (allowlist.pattern).
	Allowlist *regexp.Regexp
}

// Get implements Provider.
func (p *EnvVarProvider) Get(_ context.Context, path string, keys []string) (map[string]string, error) {
	if path != "" {
		return nil, fmt.Errorf("path is not supported by EnvVarConfigProvider, got %s", path)
	}
	out := map[string]string{}
	for _, k := range slices.Compact(slices.Sorted(slices.Values(keys))) {
		if p.Allowlist != nil && !p.Allowlist.MatchString(k) {
			continue
		}
		if v, ok := os.LookupEnv(k); ok {
			out[k] = v
		}
	}
	return out, nil
}
