package kernels

import (
	"fmt"
	"math"
	"testing"
)

var convGeoms = []ConvGeom{
	{InC: 1, InH: 1, InW: 1, KH: 1, KW: 1, StrideH: 1, StrideW: 1, DilH: 1, DilW: 1},
	{InC: 3, InH: 5, InW: 7, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilH: 1, DilW: 1},
	{InC: 2, InH: 8, InW: 6, KH: 3, KW: 2, StrideH: 2, StrideW: 3, PadH: 0, PadW: 1, DilH: 1, DilW: 1},
	{InC: 2, InH: 9, InW: 9, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 2, PadW: 3, DilH: 2, DilW: 3},
	{InC: 4, InH: 4, InW: 4, KH: 5, KW: 5, StrideH: 1, StrideW: 1, PadH: 2, PadW: 2, DilH: 1, DilW: 1},
	{InC: 1, InH: 3, InW: 10, KH: 1, KW: 4, StrideH: 3, StrideW: 1, PadH: 4, PadW: 0, DilH: 1, DilW: 2},
	{InC: 2, InH: 2, InW: 2, KH: 1, KW: 1, StrideH: 1, StrideW: 1, PadH: 3, PadW: 3, DilH: 1, DilW: 1}, // mostly padding
	{InC: 3, InH: 16, InW: 16, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilH: 1, DilW: 1},
	// Stride 1 and as many output as input columns (im2colSameWidth): a ResNet's late 3×3 on
	// 4×4, dilated, a kernel taller than the image, asymmetric padding, 1 wide, unpadded 1×1.
	{InC: 5, InH: 4, InW: 4, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilH: 1, DilW: 1},
	{InC: 2, InH: 6, InW: 5, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 2, PadW: 2, DilH: 2, DilW: 2},
	{InC: 2, InH: 2, InW: 3, KH: 7, KW: 3, StrideH: 1, StrideW: 1, PadH: 3, PadW: 1, DilH: 1, DilW: 1},
	{InC: 1, InH: 3, InW: 6, KH: 2, KW: 1, StrideH: 1, StrideW: 1, PadH: 4, PadW: 0, DilH: 1, DilW: 1},
	{InC: 3, InH: 5, InW: 1, KH: 3, KW: 1, StrideH: 1, StrideW: 1, PadH: 1, PadW: 0, DilH: 1, DilW: 1},
	{InC: 4, InH: 3, InW: 5, KH: 1, KW: 1, StrideH: 1, StrideW: 1, DilH: 1, DilW: 1},
}

func TestConvGeom(t *testing.T) {
	valid := ConvGeom{InC: 3, InH: 32, InW: 28, KH: 5, KW: 3, StrideH: 2, StrideW: 1, PadH: 2, PadW: 0, DilH: 1, DilW: 2}
	if err := valid.Validate(); err != nil {
		t.Fatal(err)
	}
	// torch: floor((32 + 4 - 4 - 1)/2) + 1 = 16; floor((28 - 4 - 1)/1) + 1 = 24.
	if valid.OutH() != 16 || valid.OutW() != 24 {
		t.Fatalf("OutH, OutW = %d, %d; want 16, 24", valid.OutH(), valid.OutW())
	}
	bad := map[string]func(*ConvGeom){
		"zero channels":    func(g *ConvGeom) { g.InC = 0 },
		"zero stride":      func(g *ConvGeom) { g.StrideW = 0 },
		"negative dil":     func(g *ConvGeom) { g.DilH = -1 },
		"negative padding": func(g *ConvGeom) { g.PadW = -1 },
		"kernel too large": func(g *ConvGeom) { g.KH = 40 },
		"dilated too wide": func(g *ConvGeom) { g.DilW = 20 },
		// d·(k − 1) = 2^32: 0 in 32-bit int arithmetic, a kernel that would seem to fit.
		"dilation wraps int32": func(g *ConvGeom) { g.InW, g.KW, g.DilW = 1, 1<<16+1, 1<<16 },
	}
	for name, f := range bad {
		g := valid
		f(&g)
		if err := g.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, g)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Im2Col with a short col did not panic")
		}
	}()
	Im2Col(valid, make([]float32, 3*32*28), make([]float32, 10))
}

func TestIm2ColAgainstDirectConvolution(t *testing.T) {
	r := newRand(5)
	for _, g := range convGeoms {
		t.Run(fmt.Sprintf("%+v", g), func(t *testing.T) {
			oh, ow := g.OutH(), g.OutW()
			const cout = 3
			img := randSlice(r, g.InC*g.InH*g.InW)
			w := randSlice(r, cout*g.InC*g.KH*g.KW)
			rows := g.InC * g.KH * g.KW
			col := fill(rows*oh*ow, float32(math.NaN())) // every entry must be written
			Im2Col(g, img, col)
			for co := 0; co < cout; co++ {
				for y := 0; y < oh; y++ {
					for x := 0; x < ow; x++ {
						// Direct convolution (cross-correlation, as torch).
						var want float64
						for c := 0; c < g.InC; c++ {
							for kh := 0; kh < g.KH; kh++ {
								for kw := 0; kw < g.KW; kw++ {
									ih := y*g.StrideH - g.PadH + kh*g.DilH
									iw := x*g.StrideW - g.PadW + kw*g.DilW
									if ih < 0 || ih >= g.InH || iw < 0 || iw >= g.InW {
										continue
									}
									want += float64(w[((co*g.InC+c)*g.KH+kh)*g.KW+kw]) * float64(img[(c*g.InH+ih)*g.InW+iw])
								}
							}
						}
						var got float64
						for k := 0; k < rows; k++ {
							got += float64(w[co*rows+k]) * float64(col[k*oh*ow+y*ow+x])
						}
						if !closeTo(got, want, 1e-9) {
							t.Fatalf("out[%d,%d,%d] = %g, want %g", co, y, x, got, want)
						}
					}
				}
			}
		})
	}
}

func TestCol2ImAdjoint(t *testing.T) {
	r := newRand(6)
	for _, g := range convGeoms {
		t.Run(fmt.Sprintf("%+v", g), func(t *testing.T) {
			nimg := g.InC * g.InH * g.InW
			ncol := g.InC * g.KH * g.KW * g.OutH() * g.OutW()
			x := randSlice(r, nimg)
			y := randSlice(r, ncol)
			col := make([]float32, ncol)
			Im2Col(g, x, col)
			var lhs float64
			for i := range col {
				lhs += float64(col[i]) * float64(y[i])
			}
			base := randSlice(r, nimg)
			img := append([]float32(nil), base...)
			Col2Im(g, y, img) // accumulates onto base
			var rhs float64
			for i := range x {
				rhs += float64(x[i]) * (float64(img[i]) - float64(base[i]))
			}
			if !closeTo(lhs, rhs, 1e-5*(1+math.Abs(lhs))) {
				t.Fatalf("<Im2Col(x), y> = %g, <x, Col2Im(y)> = %g", lhs, rhs)
			}
			// Accumulation: a second Col2Im adds the same amount again.
			img2 := append([]float32(nil), img...)
			Col2Im(g, y, img2)
			for i := range img2 {
				want := 2*float64(img[i]) - float64(base[i])
				if !closeTo(float64(img2[i]), want, 1e-5) {
					t.Fatalf("Col2Im does not accumulate: img[%d] = %g, want %g", i, img2[i], want)
				}
			}
		})
	}
}
