package exepages

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestParseSmaps(t *testing.T) {
	text := `00400000-020bd000 r--p 00000000 fd:01 123 /usr/bin/lapis
Size:              29428 kB
Rss:                3188 kB
Anonymous:             0 kB
020bd000-058c1000 r-xp 01cbd000 fd:01 123 /usr/bin/lapis
Rss:               47116 kB
Anonymous:             0 kB
09a89000-09a8a000 r--p 09689000 fd:01 123 /usr/bin/lapis
Rss:                   4 kB
Anonymous:             4 kB
7f0000000000-7f0000001000 rw-p 00000000 00:00 0
Rss:                   4 kB
Anonymous:             4 kB
7f0000002000-7f0000003000 r--p 00000000 fd:01 9 /tmp/a file with spaces
Rss:                   4 kB
VmFlags: rd mr mw me
`
	got, err := parseSmaps([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []mapping{
		{start: 0x400000, end: 0x20bd000, perms: "r--p", path: "/usr/bin/lapis", rss: 3188 << 10},
		{start: 0x20bd000, end: 0x58c1000, perms: "r-xp", path: "/usr/bin/lapis", rss: 47116 << 10},
		{start: 0x9a89000, end: 0x9a8a000, perms: "r--p", path: "/usr/bin/lapis", rss: 4 << 10, anonymous: 4 << 10},
		{start: 0x7f0000000000, end: 0x7f0000001000, perms: "rw-p", rss: 4 << 10, anonymous: 4 << 10},
		{start: 0x7f0000002000, end: 0x7f0000003000, perms: "r--p", path: "/tmp/a file with spaces", rss: 4 << 10},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d mappings, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, err := parseSmaps([]byte("zzz r--p 0 0 0\n")); err == nil {
		t.Error("a malformed header parsed")
	}
}

func TestReleasable(t *testing.T) {
	for _, tc := range []struct {
		m    mapping
		want bool
	}{
		{mapping{perms: "r-xp", rss: 4096}, true},
		{mapping{perms: "r--p", rss: 4096}, true},
		{mapping{perms: "r--p", rss: 4096, anonymous: 4096}, false}, // relocated, or a breakpoint
		{mapping{perms: "rw-p", rss: 4096}, false},
		{mapping{perms: "r--s", rss: 4096}, false},
		{mapping{perms: "r-xp"}, false}, // nothing resident
	} {
		if got := releasable(tc.m); got != tc.want {
			t.Errorf("releasable(%+v) = %v, want %v", tc.m, got, tc.want)
		}
	}
}

// unixAddr is the address of a mapping's first byte.
func unixAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

// mappingOf returns the mapping of this process that holds addr.
func mappingOf(t *testing.T, addr uintptr) mapping {
	t.Helper()
	maps, err := readSmaps("self")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range maps {
		if uint64(addr) >= m.start && uint64(addr) < m.end {
			return m
		}
	}
	t.Fatalf("no mapping holds %x", addr)
	return mapping{}
}

// TestReleaseFile maps a file twice, read-only and read-only after a write (as the dynamic loader
// leaves its relocated tables): the first is released and reads the same bytes again, the second
// is left with its written byte.
func TestReleaseFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "exe")
	content := bytes.Repeat([]byte("lapis-exepages-"), 64<<10)
	content = content[:len(content)&^(os.Getpagesize()-1)]
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	clean, err := unix.Mmap(int(f.Fd()), 0, len(content), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(clean)
	written, err := unix.Mmap(int(f.Fd()), 0, len(content), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(written)
	written[0] = 'X'
	if err := unix.Mprotect(written, unix.PROT_READ); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(clean, content) {
		t.Fatal("the clean mapping does not read the file")
	}
	cleanAddr := unixAddr(clean)
	if m := mappingOf(t, cleanAddr); m.rss == 0 {
		t.Fatalf("the clean mapping is not resident after reading it: %+v", m)
	}

	ranges, err := releasableOf("self", path)
	if err != nil {
		t.Fatal(err)
	}
	released, err := release(ranges)
	if err != nil {
		t.Fatal(err)
	}
	if released == 0 {
		t.Error("nothing released")
	}
	if m := mappingOf(t, cleanAddr); m.rss != 0 {
		t.Errorf("the clean mapping is still resident: %+v", m)
	}
	if m := mappingOf(t, unixAddr(written)); m.rss == 0 || m.anonymous == 0 {
		t.Errorf("the written mapping was released: %+v", m)
	}
	if written[0] != 'X' {
		t.Errorf("the written byte is lost: %q", written[0])
	}
	if !bytes.Equal(clean, content) {
		t.Error("the released mapping reads other bytes")
	}
}

// TestRelease releases this test binary's own pages and goes on running.
func TestRelease(t *testing.T) {
	released, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	if released == 0 {
		t.Fatal("nothing of the executable released")
	}
	if got := strings.Repeat("ok", 2); got != "okok" {
		t.Fatalf("after release: %q", got)
	}
	again, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	if again >= released {
		t.Errorf("released %d bytes, then %d: the first release left the pages mapped", released, again)
	}
}
