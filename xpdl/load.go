package xpdl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// MaxExternalPackages limits how many packages one Load may read in total,
// so that a chain of references cannot make it run away.
const MaxExternalPackages = 256

// ErrExternalPackage is wrapped by ExternalPackage.LoadErr.
var ErrExternalPackage = errors.New("external package not loaded")

// Load reads the package in the file at path and, recursively, every
// package it references as an ExternalPackage, resolved relative to the
// referencing file and never outside path's directory. A package is read
// once however often it is referenced, so recursive sets (M1 references M2,
// M2 references M1) load. The error is about the file at path itself; a
// reference that cannot be loaded is recorded in its ExternalPackage.LoadErr
// and reported by Validate.
func Load(filePath string, opts *ReadOpts) (*Package, error) {
	o := opts.withDefaults()
	dir, base := filepath.Split(filePath)
	if dir == "" {
		dir = "."
	}
	if opts == nil || opts.Name == "" {
		o.Name = filePath
	}
	// An os.Root confines every reference to dir, symbolic links included.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	// Closing a read-only directory handle cannot lose data.
	defer func() { _ = root.Close() }()
	l := &loader{fsys: root.FS(), opts: o, byName: map[string]*Package{}, display: func(name string) string {
		if name == base {
			return o.Name // filePath unless the caller named it
		}
		return filepath.Join(dir, filepath.FromSlash(name))
	}}
	return l.load(base)
}

// LoadFS is Load on a file system: name is a slash-separated path in fsys
// (see io/fs.ValidPath), and references resolve within fsys.
func LoadFS(fsys fs.FS, name string, opts *ReadOpts) (*Package, error) {
	o := opts.withDefaults()
	l := &loader{fsys: fsys, opts: o, byName: map[string]*Package{}, display: func(n string) string { return n }}
	if opts != nil && opts.Name != "" {
		l.display = func(n string) string {
			if n == name {
				return opts.Name
			}
			return n
		}
	}
	return l.load(name)
}

type loader struct {
	fsys    fs.FS
	opts    ReadOpts
	byName  map[string]*Package
	display func(name string) string
}

func (l *loader) load(name string) (*Package, error) {
	if p, ok := l.byName[name]; ok {
		return p, nil
	}
	if len(l.byName) >= MaxExternalPackages {
		return nil, fmt.Errorf("more than %d packages referenced", MaxExternalPackages)
	}
	o := l.opts
	o.Name = l.display(name)
	f, err := l.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	src, err := readAll(f, o.MaxBytes)
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", o.Name, err)
	}
	pkg, err := readBytes(src, o)
	if err != nil {
		return nil, err
	}
	l.byName[name] = pkg
	for _, ext := range pkg.ExternalPackages {
		target, err := resolveHref(name, ext.Href)
		if err == nil {
			ext.Package, err = l.load(target)
		}
		if err != nil {
			ext.LoadErr = fmt.Errorf("%w: %q: %w", ErrExternalPackage, ext.Href, err)
		}
	}
	return pkg, nil
}

// resolveHref resolves an ExternalPackage href against the name of the
// referencing file. Only relative file references inside the file system
// are followed.
func resolveHref(from, href string) (string, error) {
	h := strings.TrimSpace(href)
	h = strings.TrimPrefix(h, "file:")
	switch {
	case h == "":
		return "", errors.New("empty href")
	case strings.Contains(h, "://"):
		return "", errors.New("only relative file references are loaded")
	case strings.HasPrefix(h, "/"), strings.HasPrefix(h, "\\"), len(h) > 1 && h[1] == ':':
		return "", errors.New("absolute paths are not followed; only references relative to the package are")
	}
	h = strings.ReplaceAll(h, "\\", "/")
	target := path.Join(path.Dir(from), h)
	if !fs.ValidPath(target) {
		return "", errors.New("reference leaves the package's directory")
	}
	return target, nil
}
