package serve

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strings"
	"testing"
)

// TestContentEncodingRefused: a body with a Content-Encoding (gzip, deflate, br…) is never
// decoded (no decompression bombs) and gets 415 naming the coding (RFC 9110 §8.4.1). It had been
// parsed as plain JSON ("malformed request at byte 0") and, as a raw body of the right length,
// predicted on as if its bytes were the floats.
func TestContentEncodingRefused(t *testing.T) {
	_, ts := newTestServer(t, Config{}, ModelConfig{Name: "m", Path: demoModel})
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write(instancesJSON(demoInputs(1, 1), 784))
	zw.Close()
	req, err := http.NewRequest("POST", ts.URL+"/v1/models/m:predict", bytes.NewReader(zb.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	msg := errorOf(t, b.Bytes())
	if resp.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(strings.ToLower(msg), "content-encoding") {
		t.Errorf("gzip body: status %d, error %q; want 415 naming Content-Encoding", resp.StatusCode, msg)
	}

	// A raw body that says it is gzip-compressed: its bytes are not the floats, yet they are
	// predicted on (200) when their length is a whole number of inputs and none is NaN/Inf.
	req, err = http.NewRequest("POST", ts.URL+"/v1/models/m:predict", bytes.NewReader(rawBody(demoInputs(1, 2))))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Content-Encoding", "gzip")
	resp2, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("raw body with Content-Encoding: gzip: status %d, want 415 (the encoded bytes were predicted on as float32s)", resp2.StatusCode)
	}
}
