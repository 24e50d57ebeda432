// Command servecost runs one kind of request N times for counting its instructions under
// valgrind (bench/servecost.sh): the in-process prediction (-mode predict), or a predict request
// through the serve package's HTTP handler without the network (-mode json or -mode raw), for the
// demo model at K = 32, one input. The script runs each mode with N and 2N and takes the
// difference, so loading and warm-up cancel; wall time on a shared machine would be noise.
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"

	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/serve"
)

func main() {
	model := flag.String("model", "cmd/edgebnn/demo/model.ebnn", "the model `FILE`")
	mode := flag.String("mode", "predict", "predict, json, json3 (3 significant digits), jsonpix (integers 0…255, raw pixels) or raw")
	n := flag.Int("n", 100, "requests")
	flag.Parse()
	if err := run(*model, *mode, *n); err != nil {
		fmt.Fprintln(os.Stderr, "servecost:", err)
		os.Exit(1)
	}
}

func run(path, mode string, n int) error {
	opts := runtime.Options{Samples: 32, Seed: 1}
	m, err := runtime.Load(path)
	if err != nil {
		return err
	}
	defer m.Close()
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, m.InputSize())
	for i := range x {
		x[i] = r.Float32()
	}
	switch mode {
	case "predict":
		p, err := m.NewPredictor(opts)
		if err != nil {
			return err
		}
		var pr runtime.Prediction
		for range n {
			if err := p.Predict(x, &pr); err != nil {
				return err
			}
		}
		return nil
	case "json", "json3", "jsonpix", "raw":
	default:
		return fmt.Errorf("mode %q is not predict, json, json3, jsonpix or raw", mode)
	}
	s, err := serve.New(serve.Config{Concurrency: 1}, serve.ModelConfig{Name: "m", Path: path, Options: opts})
	if err != nil {
		return err
	}
	defer s.Close()
	var body []byte
	ctype := "application/json"
	if mode != "raw" {
		prec := -1
		switch mode {
		case "json3":
			prec = 3
			for i, v := range x { // predict what is sent
				x[i] = float32(mustParse(strconv.FormatFloat(float64(v), 'g', 3, 32)))
			}
		case "jsonpix":
			for i, v := range x {
				x[i] = float32(math.Floor(256 * float64(v)))
			}
		}
		var b bytes.Buffer
		b.WriteString(`{"instances":[[`)
		for i, v := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatFloat(float64(v), 'g', prec, 32))
		}
		b.WriteString("]]}")
		body = b.Bytes()
	} else {
		ctype = "application/octet-stream"
		body = make([]byte, 4*len(x))
		for i, v := range x {
			binary.LittleEndian.PutUint32(body[4*i:], math.Float32bits(v))
		}
	}
	h := s.Handler()
	for range n {
		req := httptest.NewRequest(http.MethodPost, "/v1/models/m:predict", bytes.NewReader(body))
		req.Header.Set("Content-Type", ctype)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			return fmt.Errorf("status %d: %s", w.Code, w.Body.String())
		}
	}
	return nil
}

func mustParse(s string) float64 {
	v, err := strconv.ParseFloat(s, 32)
	if err != nil {
		panic(err)
	}
	return v
}
