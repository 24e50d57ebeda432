package boards_test

import (
	"fmt"
	"log"

	"github.com/edgebnn/edgebnn/boards"
)

// Looking up a built-in board and the emulated test matrix.
func ExampleEmbedded() {
	profiles, err := boards.Embedded()
	if err != nil {
		log.Fatal(err)
	}
	rpi4, ok := boards.Lookup(profiles, "rpi4")
	if !ok {
		log.Fatal("no rpi4 profile")
	}
	fmt.Println(rpi4.Platform(), rpi4.QEMUCommand(), rpi4.BudgetBytes>>20, "MiB budget")
	for _, t := range boards.TestTargets(profiles) {
		fmt.Println(t.Line())
	}
	// Output:
	// linux/arm64 [qemu-aarch64-static -cpu cortex-a72] 2048 MiB budget
	// arm64-a53 arm64 - qemu-aarch64-static cortex-a53
	// arm64-a72 arm64 - qemu-aarch64-static cortex-a72
	// arm64-a76 arm64 - qemu-aarch64-static cortex-a76
	// armv7 arm 7 qemu-arm-static cortex-a8
	// armv6 arm 6 qemu-arm-static arm1176
}
