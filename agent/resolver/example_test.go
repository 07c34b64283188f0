package resolver_test

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/agent/resolver"
	"golang.org/x/sys/unix"
)

// One Resolver, kept between calls, asked where 16 pages of this process
// live. Without CAP_SYS_ADMIN the pages are still present, their PFNs
// hidden, and the result warns ErrPFNHidden.
func Example() {
	r, err := resolver.New(procmem.Default(), resolver.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()

	ps := int(procmem.PageSize())
	buf, err := unix.Mmap(-1, 0, 16*ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer unix.Munmap(buf)
	for i := 0; i < len(buf); i += ps {
		buf[i] = 1 // touch every page
	}

	vaddr := uint64(uintptr(unsafe.Pointer(&buf[0])))
	res, err := r.Resolve(os.Getpid(), vaddr, uint64(len(buf)))
	switch {
	case errors.Is(err, resolver.ErrProcessGone):
		fmt.Println("gone")
	case err != nil:
		fmt.Println(err)
	default:
		fmt.Println("pages", res.Pages, "present", res.Present)
	}
	// Output: pages 16 present 16
}
