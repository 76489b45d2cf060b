package index

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// precheck reads the two bbolt meta pages of an existing file and refuses
// a file shorter than the pages they claim. bbolt maps the file and reads
// those pages without bounds checks, so a truncated file (a copy cut short,
// a full disk) would crash the process with SIGSEGV instead of failing.
//
// The layout is bbolt's (v1.3–v1.5): page header of 16 bytes, then the meta
// fields magic u32, version u32, pageSize u32, flags u32, root bucket
// (16 bytes), freelist pgid u64, high-water pgid u64, txid u64, checksum u64,
// the checksum being FNV-64a of the meta fields before it.
func precheck(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if size == 0 {
		return nil // a new, empty file: bbolt initialises it
	}
	var best struct {
		ok                   bool
		txid, pgid, freelist uint64
		pageSize             uint32
	}
	buf := make([]byte, 80)
	offsets := []int64{0}
	for i := 0; i < len(offsets); i++ { // the first meta page adds the second's offset
		off := offsets[i]
		if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
			return err
		}
		le := binary.LittleEndian
		if le.Uint32(buf[16:]) != 0xED0CDAED {
			if off == 0 {
				offsets = append(offsets, int64(os.Getpagesize())) // the first is broken: try the usual place of the second
			}
			continue
		}
		pageSize := le.Uint32(buf[24:])
		h := fnv.New64a()
		h.Write(buf[16:72])
		if h.Sum64() != le.Uint64(buf[72:]) {
			if off == 0 {
				offsets = append(offsets, int64(os.Getpagesize()))
			}
			continue
		}
		if off == 0 && pageSize >= 512 && pageSize <= 1<<20 {
			offsets = append(offsets, int64(pageSize)) // the second meta page
		}
		txid := le.Uint64(buf[64:])
		if !best.ok || txid > best.txid {
			best.ok, best.txid, best.pageSize = true, txid, pageSize
			best.freelist, best.pgid = le.Uint64(buf[48:]), le.Uint64(buf[56:])
		}
	}
	if !best.ok {
		return fmt.Errorf("%s is not a listings index (no valid bbolt meta page)", path)
	}
	need := int64(best.pgid) * int64(best.pageSize)
	if size < need || (best.freelist != 0xFFFFFFFFFFFFFFFF && int64(best.freelist) >= int64(best.pgid)) {
		return fmt.Errorf("%s is damaged: %d bytes, but its pages need %d (truncated copy or full disk?); restore it from a backup", path, size, need)
	}
	return nil
}
