// Package csvrecords reads CSV records within limits (rows, line length, columns, bytes) and
// parses their fields as finite float32 values: the reader of train/data's CSV data sets and of
// predict's CSV inputs. It imports only the standard library and internal/readlimit, so the
// board binary links it without the trainer.
package csvrecords

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/edgebnn/edgebnn/internal/readlimit"
	"unicode"
)

// Default limits (Limits fields left zero take these).
const (
	// DefaultMaxBytes bounds the bytes read from one CSV input: 1 GiB.
	DefaultMaxBytes = 1 << 30
	// DefaultMaxRows bounds the records of one CSV input (header included): 16 Mi.
	DefaultMaxRows = 1 << 24
	// DefaultMaxLineBytes bounds one line: 16 MiB (a 1024×1024×3 image as text fits).
	DefaultMaxLineBytes = 16 << 20
	// DefaultMaxColumns bounds the fields of one record: 4 Mi.
	DefaultMaxColumns = 1 << 22
)

// Limits bound what the CSV readers accept, so that a hostile or broken file is an error
// after bounded memory and time. A zero field takes its Default* value.
type Limits struct {
	// MaxBytes bounds the bytes read (DefaultMaxBytes).
	MaxBytes int64
	// MaxRows bounds the records, header included (DefaultMaxRows).
	MaxRows int
	// MaxLineBytes bounds the length of one line, newline excluded (DefaultMaxLineBytes).
	MaxLineBytes int
	// MaxColumns bounds the fields of one record (DefaultMaxColumns).
	MaxColumns int
}

// WithDefaults returns l with its zero fields set to the defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxRows <= 0 {
		l.MaxRows = DefaultMaxRows
	}
	if l.MaxLineBytes <= 0 {
		l.MaxLineBytes = DefaultMaxLineBytes
	}
	if l.MaxColumns <= 0 {
		l.MaxColumns = DefaultMaxColumns
	}
	return l
}

// Records streams the records of a CSV file within Limits: blank lines are skipped,
// fields are trimmed of leading space, a UTF-8 byte order mark is dropped, and every error
// names the file and the line.
type Records struct {
	name string
	lim  Limits
	cr   *csv.Reader
	ll   *lineLimiter
	rows int
}

// New reads CSV records from r; name (the file) prefixes errors. The caller keeps
// records only until the next call of Next (the slice is reused).
func New(r io.Reader, name string, lim Limits) *Records {
	lim = lim.WithDefaults()
	ll := &lineLimiter{r: readlimit.Reader(r, name, lim.MaxBytes), max: lim.MaxLineBytes, maxFields: lim.MaxColumns, line: 1}
	cr := csv.NewReader(ll)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	return &Records{name: name, lim: lim, cr: cr, ll: ll}
}

// Next returns the next non-blank record and the line it starts on, or io.EOF after the last.
func (c *Records) Next() ([]string, int, error) {
	for {
		rec, err := c.cr.Read()
		if errors.Is(err, io.EOF) {
			return nil, 0, io.EOF
		}
		if err != nil {
			var le *limitError
			if errors.As(err, &le) {
				return nil, le.line, fmt.Errorf("%s: %w", c.name, le)
			}
			return nil, 0, fmt.Errorf("%s: %w", c.name, err)
		}
		line, _ := c.cr.FieldPos(0)
		if c.rows == 0 && line == 1 && len(rec) > 0 {
			rec[0] = strings.TrimPrefix(rec[0], "\ufeff") // a byte order mark
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) > c.lim.MaxColumns {
			return nil, line, fmt.Errorf("%s: line %d: %d fields (at most %d): %w", c.name, line, len(rec), c.lim.MaxColumns, ErrTooManyFields)
		}
		if c.rows++; c.rows > c.lim.MaxRows {
			return nil, line, fmt.Errorf("%s: line %d: more than %d rows", c.name, line, c.lim.MaxRows)
		}
		return rec, line, nil
	}
}

// IsHeaderRow reports whether rec is a header: a row in which no field is a number and every
// field is a name — not empty, with a letter in it. Any other row is data, so a malformed data
// row (empty fields, "?", a line of another separator) is an error rather than a dropped header.
func IsHeaderRow(rec []string) bool {
	for _, s := range rec {
		t := strings.TrimSpace(s)
		// Any number, NaN and infinities included (a first row of NaNs is data with NaNs).
		if _, err := strconv.ParseFloat(t, 64); err == nil || errors.Is(err, strconv.ErrRange) || !strings.ContainsFunc(t, unicode.IsLetter) {
			return false
		}
	}
	return len(rec) > 0
}

// ParseFinite parses a CSV field as a finite float32 (where every value ends up), rounded once
// to the nearest float32 — so 3.4028235e38, float32's largest value as numpy and Go print it, is
// that value, as serve's JSON parser reads it. The error quotes at most a short prefix of the field.
func ParseFinite(s string) (float32, error) {
	t := strings.TrimSpace(s)
	if strings.ContainsAny(t, "xX_") { // Go's hexadecimal floats and digit separators, not CSV's
		return 0, fmt.Errorf("%s is not a number", QuotePrefix(s))
	}
	v, err := strconv.ParseFloat(t, 32)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%s is not a number", QuotePrefix(s))
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s is not a finite float32", QuotePrefix(s))
	}
	return float32(v), nil
}

// QuotePrefix quotes s, cut to its first 32 bytes (for error messages).
func QuotePrefix(s string) string {
	const n = 32
	if len(s) <= n {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:n]) + "…"
}

// lineLimiter passes bytes through and fails, before the CSV reader buffers them, once a line
// grows past max bytes or a record past maxFields fields (commas outside quotes: encoding/csv
// would build the whole record, some 40 bytes a field, before its length could be checked), or
// when a quoted field holds a line break (records of numbers never need one; it would let one
// record span the whole input).
type lineLimiter struct {
	r         io.Reader
	max, cur  int
	maxFields int
	commas    int
	quoted    bool
	line      int
	lastError error
}

// ErrTooManyFields is wrapped by the error of a record with more than Limits.MaxColumns fields.
var ErrTooManyFields = errors.New("too many fields")

// limitError is a line or record past lineLimiter's bounds.
type limitError struct {
	line int
	what string
	err  error // ErrTooManyFields, or nil
}

func (e *limitError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.what) }
func (e *limitError) Unwrap() error { return e.err }

func (l *lineLimiter) Read(p []byte) (int, error) {
	if l.lastError != nil {
		return 0, l.lastError
	}
	n, err := l.r.Read(p)
	for i, b := range p[:n] {
		switch b {
		case '\n':
			if l.quoted {
				l.lastError = &limitError{l.line, "a quoted field spans lines", nil}
				return i, l.lastError
			}
			l.cur, l.commas = 0, 0
			l.line++
			continue
		case '"':
			l.quoted = !l.quoted // "" inside a quoted field toggles twice
		case ',':
			if !l.quoted {
				if l.commas++; l.commas >= l.maxFields {
					l.lastError = &limitError{l.line, fmt.Sprintf("more than %d fields", l.maxFields), ErrTooManyFields}
					return i, l.lastError
				}
			}
		}
		if l.cur++; l.cur > l.max {
			l.lastError = &limitError{l.line, fmt.Sprintf("longer than %d bytes", l.max), nil}
			return i, l.lastError
		}
	}
	return n, err
}
