package configprovider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

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
		return &FileProvider{allowed: ap}, nil
	case DirectoryClass, "DirectoryConfigProvider":
		ap, err := parseAllowedPaths(params[ParamAllowedPaths])
		if err != nil {
			return nil, err
		}
		return &DirectoryProvider{allowed: ap}, nil
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

// MaxFileBytes bounds what the File and Directory providers read from one
// file: a secret or a properties file is small, and a path such as
// /dev/zero would otherwise be read forever.
const MaxFileBytes = 1 << 20

// allowedPath is one entry of allowed.paths: as written (cleaned) and with
// its symlinks resolved.
type allowedPath struct{ path, real string }

// parseAllowedPaths reads allowed.paths: absolute paths that exist, as
// KIP-993 requires. Empty: every path is allowed (nil).
func parseAllowedPaths(v string) ([]allowedPath, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []allowedPath
	for p := range strings.SplitSeq(v, ",") {
		p = filepath.Clean(strings.TrimSpace(p))
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("%s: path %s is not absolute", ParamAllowedPaths, p)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, fmt.Errorf("%s: path %s does not exist", ParamAllowedPaths, p)
		}
		out = append(out, allowedPath{path: p, real: real})
	}
	return out, nil
}

// under reports whether path is dir or lies under it, component by
// component.
func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// checkPath checks path against allowed (nil: all allowed) and returns
// the path to read. Both the cleaned text and the path with its symlinks
// resolved must lie under an allowed path, so a link inside an allowed
// directory cannot lead out of it; the resolved path is the one read.
func checkPath(path string, allowed []allowedPath) (string, error) {
	if allowed == nil {
		return path, nil
	}
	clean := filepath.Clean(path)
	if !slices.ContainsFunc(allowed, func(a allowedPath) bool { return under(clean, a.path) || under(clean, a.real) }) {
		return "", fmt.Errorf("path %s is not in %s", path, ParamAllowedPaths)
	}
	real, err := filepath.EvalSymlinks(clean)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if !slices.ContainsFunc(allowed, func(a allowedPath) bool { return under(real, a.real) }) {
		return "", fmt.Errorf("path %s leads out of %s through a symbolic link", path, ParamAllowedPaths)
	}
	return real, nil
}

// readFile reads a regular file of at most MaxFileBytes; name is how
// errors call it. A FIFO, a device or a directory is refused before it is
// opened, and again after (it may have been swapped in between), so
// nothing here blocks; ctx is checked before and after the read.
func readFile(ctx context.Context, path, name string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	regular := func(st fs.FileInfo) error {
		if !st.Mode().IsRegular() {
			return fmt.Errorf("read %s: not a regular file", name)
		}
		if st.Size() > MaxFileBytes {
			return fmt.Errorf("read %s: larger than the limit of %d bytes", name, MaxFileBytes)
		}
		return nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, errors.Unwrap(err))
	}
	if err := regular(st); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, errors.Unwrap(err))
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, errors.Unwrap(err))
	}
	if err := regular(st); err != nil {
		return nil, err
	}
	// The file may grow after the Stat: read one byte past the limit.
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, errors.Unwrap(err))
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("read %s: larger than the limit of %d bytes", name, MaxFileBytes)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return b, nil
}

// FileProvider is Kafka's FileConfigProvider: the path is a .properties
// file, the keys its property names.
type FileProvider struct {
	// allowed, when not nil, are the only paths that may be read
	// (allowed.paths; NewProvider sets them).
	allowed []allowedPath
}

// Get implements Provider.
func (p *FileProvider) Get(ctx context.Context, path string, keys []string) (map[string]string, error) {
	out := map[string]string{}
	if path == "" {
		return out, nil
	}
	clean, err := checkPath(path, p.allowed)
	if err != nil {
		return nil, err
	}
	b, err := readFile(ctx, clean, path)
	if err != nil {
		return nil, err
	}
	props, err := config.ParseProperties(bytes.NewReader(b))
	if err != nil {
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
	// allowed, when not nil, are the only paths that may be read
	// (allowed.paths; NewProvider sets them).
	allowed []allowedPath
}

// Get implements Provider.
func (p *DirectoryProvider) Get(ctx context.Context, path string, keys []string) (map[string]string, error) {
	out := map[string]string{}
	if path == "" {
		return out, nil
	}
	dir, err := checkPath(path, p.allowed)
	if err != nil {
		return nil, err
	}
	// Only that it is a directory: the keys name the files to read.
	st, err := os.Stat(dir)
	if err == nil && !st.IsDir() {
		err = syscall.ENOTDIR
	}
	if err != nil {
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
		// Kafka follows symlinks here (Files.isRegularFile): so does Stat,
		// but with allowed.paths set the link must stay inside them.
		st, err := os.Stat(f)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		if f, err = checkPath(f, p.allowed); err != nil {
			return nil, err
		}
		b, err := readFile(ctx, f, k+" in "+path)
		if err != nil {
			return nil, err
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
