/*
Copyright The meshinit Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package oci

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// SharedLibraries returns what the ELF programs and libraries at paths need
// to load, read from the files themselves: the loader (PT_INTERP) and the
// DT_NEEDED libraries, recursively, each with the symbolic links that lead
// to it. paths and the result are absolute paths inside root, an unpacked
// image root; the result is sorted and excludes nothing it found (a library
// already among paths is listed again). Libraries are looked up as the
// loader does: DT_RPATH/DT_RUNPATH, then the platform's LibDirs. Files that
// are not ELF (scripts) are skipped. Every library that cannot be found is
// named in the error, so a recipe fails instead of shipping a program that
// cannot start.
func SharedLibraries(root string, p Platform, paths ...string) ([]string, error) {
	need := map[string]bool{}
	done := map[string]bool{}
	var missing []string
	queue := append([]string(nil), paths...)
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		file, _, err := resolveInRoot(root, cur)
		if err != nil {
			return nil, fmt.Errorf("elf: %s: %w", cur, err)
		}
		if done[file] {
			continue
		}
		done[file] = true
		obj, err := readELF(filepath.Join(root, file))
		if err != nil {
			return nil, fmt.Errorf("elf: %s: %w", file, err)
		}
		if obj == nil {
			continue
		}
		var deps []string
		if obj.interp != "" {
			deps = append(deps, obj.interp)
		}
		for _, lib := range obj.needed {
			found, err := findLibrary(root, p, file, obj, lib)
			if err != nil {
				return nil, err
			}
			if found == "" {
				missing = append(missing, fmt.Sprintf("%s (needed by %s)", lib, file))
				continue
			}
			deps = append(deps, found)
		}
		for _, d := range deps {
			target, links, err := resolveInRoot(root, d)
			if err != nil {
				missing = append(missing, fmt.Sprintf("%s (needed by %s): %v", d, file, err))
				continue
			}
			for _, l := range append(links, target) {
				need[l] = true
			}
			queue = append(queue, target)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("elf: not found in %s (searched DT_RUNPATH and %v): %s",
			root, p.LibDirs(), strings.Join(missing, "; "))
	}
	out := make([]string, 0, len(need))
	for n := range need {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// IsELF reports whether the absolute image path p inside root is an ELF
// file, following symbolic links inside root.
func IsELF(root, p string) (bool, error) {
	file, _, err := resolveInRoot(root, p)
	if err != nil {
		return false, fmt.Errorf("elf: %s: %w", p, err)
	}
	if fi, err := os.Stat(filepath.Join(root, file)); err != nil || !fi.Mode().IsRegular() {
		return false, err
	}
	obj, err := readELF(filepath.Join(root, file))
	if err != nil {
		return false, fmt.Errorf("elf: %s: %w", p, err)
	}
	return obj != nil, nil
}

// CheckStatic fails unless the host file is a statically linked ELF
// program for p (no loader, no shared libraries), as a binary built with
// CGO_ENABLED=0 is.
func CheckStatic(file string, p Platform) error {
	obj, err := readELF(file)
	if err != nil {
		return fmt.Errorf("elf: %s: %w", file, err)
	}
	switch {
	case obj == nil:
		return fmt.Errorf("elf: %s is not an ELF program", file)
	case obj.machine != p.Machine:
		return fmt.Errorf("elf: %s is for %v, want %v (%s)", file, obj.machine, p.Machine, p)
	case obj.interp != "" || len(obj.needed) > 0:
		return fmt.Errorf("elf: %s is dynamically linked (loader %q, libraries %v); build it with CGO_ENABLED=0", file, obj.interp, obj.needed)
	}
	return nil
}

type elfObject struct {
	machine elf.Machine
	class   elf.Class
	interp  string
	needed  []string
	rpath   []string // DT_RPATH, used only when there is no DT_RUNPATH
	runpath []string
}

// readELF returns nil, nil for files that are not ELF.
func readELF(name string) (*elfObject, error) {
	file, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	magic := make([]byte, len(elf.ELFMAG))
	if _, err := io.ReadFull(file, magic); err != nil || string(magic) != elf.ELFMAG {
		return nil, nil
	}
	f, err := elf.NewFile(file)
	if err != nil {
		return nil, err
	}
	obj := &elfObject{machine: f.Machine, class: f.Class}
	for _, prog := range f.Progs {
		if prog.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, prog.Filesz)
		if _, err := prog.ReadAt(b, 0); err != nil {
			return nil, fmt.Errorf("read PT_INTERP: %w", err)
		}
		obj.interp = strings.TrimRight(string(b), "\x00")
	}
	if f.SectionByType(elf.SHT_DYNAMIC) == nil {
		return obj, nil // static
	}
	if obj.needed, err = f.DynString(elf.DT_NEEDED); err != nil {
		return nil, fmt.Errorf("read DT_NEEDED: %w", err)
	}
	for tag, dst := range map[elf.DynTag]*[]string{elf.DT_RPATH: &obj.rpath, elf.DT_RUNPATH: &obj.runpath} {
		vals, err := f.DynString(tag)
		if err != nil {
			return nil, fmt.Errorf("read %v: %w", tag, err)
		}
		for _, v := range vals {
			*dst = append(*dst, strings.Split(v, ":")...)
		}
	}
	return obj, nil
}

// findLibrary returns the image path of lib as the loader would find it for
// obj (at image path file), or "" if it is nowhere.
func findLibrary(root string, p Platform, file string, obj *elfObject, lib string) (string, error) {
	if strings.Contains(lib, "/") {
		return lib, nil
	}
	var dirs []string
	if len(obj.runpath) == 0 {
		dirs = append(dirs, obj.rpath...)
	}
	dirs = append(dirs, obj.runpath...)
	dirs = append(dirs, p.LibDirs()...)
	origin := path.Dir(file)
	for _, d := range dirs {
		d = strings.NewReplacer("${ORIGIN}", origin, "$ORIGIN", origin).Replace(d)
		if !path.IsAbs(d) {
			continue
		}
		cand := path.Join(d, lib)
		target, _, err := resolveInRoot(root, cand)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("elf: %s: %w", cand, err)
		}
		dep, err := readELF(filepath.Join(root, target))
		if err != nil {
			return "", fmt.Errorf("elf: %s: %w", target, err)
		}
		// The loader skips libraries of another machine or class.
		if dep != nil && dep.machine == obj.machine && dep.class == obj.class {
			return cand, nil
		}
	}
	return "", nil
}

// resolveInRoot follows the symbolic links in the absolute image path p,
// treating root as "/" (absolute targets stay inside root). It returns the
// final path and every link passed on the way, all as image paths.
func resolveInRoot(root, p string) (string, []string, error) {
	var links []string
	cur := "/"
	rest := strings.Split(strings.TrimPrefix(path.Clean("/"+p), "/"), "/")
	for hops := 0; len(rest) > 0; {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, name)
		fi, err := os.Lstat(filepath.Join(root, next))
		if err != nil {
			return "", nil, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return "", nil, fmt.Errorf("too many symbolic links resolving %s", p)
		}
		target, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return "", nil, err
		}
		links = append(links, next)
		if path.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return cur, links, nil
}
