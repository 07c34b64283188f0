package procmem

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// NodeMap maps a PFN to its NUMA node in O(1): memory is hot-plugged in
// blocks of block_size_bytes, and /sys/devices/system/node/nodeN/memoryM
// says that block M (PFNs [M*bs/PageSize(), (M+1)*bs/PageSize())) is on node N.
// Build it once with LoadNodeMap and again after a memory hotplug event.
type NodeMap struct {
	blockShift uint    // log2 of PFNs per block
	nodes      []int16 // node by block number, -1 where unknown
	numNodes   int
}

// ErrNoNodeInfo reports that sysfs has no memory-block information
// (no CONFIG_MEMORY_HOTPLUG sysfs, or sysfs is not mounted).
var ErrNoNodeInfo = errors.New("no memory block information in sysfs")

// LoadNodeMap reads /sys/devices/system/memory/block_size_bytes (hex) and the
// memoryM entries of every /sys/devices/system/node/nodeN directory.
func (f FS) LoadNodeMap() (*NodeMap, error) {
	bsPath := filepath.Join(f.Sys, "devices", "system", "memory", "block_size_bytes")
	raw, err := os.ReadFile(bsPath)
	if err != nil {
		return nil, fmt.Errorf("read block size: %w: %w", ErrNoNodeInfo, err)
	}
	bs, err := parseBlockSize(raw)
	if err != nil {
		return nil, fmt.Errorf("parse block size: %w", err)
	}
	nodeDir := filepath.Join(f.Sys, "devices", "system", "node")
	dirs, err := os.ReadDir(nodeDir)
	if err != nil {
		return nil, fmt.Errorf("read node directory: %w: %w", ErrNoNodeInfo, err)
	}
	blocks := map[int][]int{}
	for _, d := range dirs {
		node, ok := parseIndexedName(d.Name(), "node")
		if !ok {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(nodeDir, d.Name()))
		if err != nil {
			return nil, fmt.Errorf("read node directory: %w", err)
		}
		for _, e := range ents {
			if blk, ok := parseIndexedName(e.Name(), "memory"); ok {
				blocks[node] = append(blocks[node], blk)
			}
		}
	}
	return newNodeMap(bs, blocks)
}

// MemoryNodes counts the NUMA nodes that have memory:
// /sys/devices/system/node/has_memory, else node/online (kernels without
// N_MEMORY state files, where a CPU-only node would count too), both in the
// kernel's list format ("0-1,3"). It fails with ErrNoNodeInfo when sysfs has
// neither (a kernel built without CONFIG_NUMA has no node directory).
func (f FS) MemoryNodes() (int, error) {
	dir := filepath.Join(f.Sys, "devices", "system", "node")
	var errs []error
	for _, name := range []string{"has_memory", "online"} {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("read memory nodes: %w", err)
		}
		nodes, err := parseCPUList(raw)
		if err != nil {
			return 0, fmt.Errorf("parse node/%s: %w", name, err)
		}
		return len(nodes), nil
	}
	return 0, fmt.Errorf("read memory nodes: %w: %w", ErrNoNodeInfo, errors.Join(errs...))
}

// parseBlockSize parses block_size_bytes: a hexadecimal number without 0x,
// which must be a power of two and at least one page.
func parseBlockSize(b []byte) (uint64, error) {
	s := strings.TrimPrefix(string(bytes.TrimSpace(b)), "0x")
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("block size %q: %w", b, err)
	}
	if v < pageSize || v&(v-1) != 0 {
		return 0, fmt.Errorf("block size %#x: not a power of two of at least a page", v)
	}
	return v, nil
}

// parseIndexedName returns N for names like "node3" or "memory42".
func parseIndexedName(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || rest == "" || rest[0] == '+' || rest[0] == '-' {
		return 0, false
	}
	n, err := strconv.ParseUint(rest, 10, 31)
	if err != nil {
		return 0, false
	}
	return int(n), true
}

// maxBlocks bounds the table: 1<<24 blocks of 128 MiB is 2 PiB.
const maxBlocks = 1 << 24

// newNodeMap builds the table from block size and node -> block numbers.
func newNodeMap(blockSize uint64, blocks map[int][]int) (*NodeMap, error) {
	m := &NodeMap{}
	pages := blockSize / pageSize
	for pages > 1 {
		m.blockShift++
		pages >>= 1
	}
	top := -1
	for node, bl := range blocks {
		if node > 1<<15-1 {
			return nil, fmt.Errorf("build node map: node %d out of range", node)
		}
		for _, b := range bl {
			if b >= maxBlocks {
				return nil, fmt.Errorf("build node map: memory block %d out of range", b)
			}
			top = max(top, b)
		}
		m.numNodes = max(m.numNodes, node+1)
	}
	if top < 0 {
		return nil, fmt.Errorf("build node map: %w", ErrNoNodeInfo)
	}
	m.nodes = make([]int16, top+1)
	for i := range m.nodes {
		m.nodes[i] = -1
	}
	for node, bl := range blocks {
		for _, b := range bl {
			m.nodes[b] = int16(node)
		}
	}
	return m, nil
}

// Node returns the NUMA node of pfn, or -1 when unknown. It is safe on a nil
// map.
func (m *NodeMap) Node(pfn uint64) int32 {
	if m == nil {
		return -1
	}
	b := pfn >> m.blockShift
	if b >= uint64(len(m.nodes)) {
		return -1
	}
	return int32(m.nodes[b])
}

// BlockPages is the number of PFNs per memory block.
func (m *NodeMap) BlockPages() uint64 { return 1 << m.blockShift }

// Nodes is one more than the highest node number seen.
func (m *NodeMap) Nodes() int { return m.numNodes }

// MovePagesNodes asks move_pages(2) for the NUMA node of each virtual address
// in pid (0 is the caller) without moving anything: status[i] becomes the
// node, or a negative errno (-ENOENT when the page is not present, -EFAULT
// when unmapped). len(status) must be at least len(addrs). Another process
// needs ptrace-read permission.
func MovePagesNodes(pid int, addrs []uintptr, status []int32) error {
	if len(addrs) == 0 {
		return nil
	}
	if len(status) < len(addrs) {
		return fmt.Errorf("move pages: status has %d slots for %d addresses", len(status), len(addrs))
	}
	_, _, errno := unix.Syscall6(unix.SYS_MOVE_PAGES, uintptr(pid), uintptr(len(addrs)),
		uintptr(unsafe.Pointer(&addrs[0])), 0, uintptr(unsafe.Pointer(&status[0])), 0)
	if errno != 0 {
		if errno == unix.ESRCH {
			return fmt.Errorf("move pages: %w: %w", ErrProcessGone, errno)
		}
		return fmt.Errorf("move pages: %w", errno)
	}
	return nil
}
