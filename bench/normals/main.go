// Command normals draws standard normals with kernels.Stream.Normal, for instruction counts
// under QEMU (bench/armcount.sh's method: run with -n N and -n 2N and divide the difference by
// N). -chunk sets the length of each Normal call; -fresh resets the stream to a new one (Stream.Reset) before every call, as
// the local strategy does per sample and layer.
//
//	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -o /tmp/normals ./bench/normals
//	../shared/tools/armcount/armcount -- /tmp/normals -n 1000000
package main

import (
	"flag"
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/kernels"
)

func main() {
	n := flag.Int("n", 1<<20, "normals to draw")
	chunk := flag.Int("chunk", 100480, "normals per Normal call")
	fresh := flag.Bool("fresh", false, "a new stream for every call")
	flag.Parse()
	buf := make([]float32, *chunk)
	s := kernels.NewStream(1, 2, 3)
	var sum float64
	for i, call := 0, 0; i < *n; call++ {
		m := min(*chunk, *n-i)
		if *fresh {
			s.Reset(1, uint32(call), 3)
		}
		s.Normal(buf[:m])
		sum += float64(buf[0])
		i += m
	}
	fmt.Printf("%d normals, checksum %x\n", *n, math.Float64bits(sum))
}
