package data

import (
	"io"

	"github.com/edgebnn/edgebnn/internal/csvrecords"
)

// CSV records are read by internal/csvrecords, which predict's CSV inputs share (the board
// binary links it without this package).
type (
	// CSVLimits bound what the CSV readers accept (csvrecords.Limits).
	CSVLimits = csvrecords.Limits
	// CSVRecords streams the records of a CSV file within CSVLimits (csvrecords.Records).
	CSVRecords = csvrecords.Records
)

// NewCSVRecords reads CSV records from r; name (the file) prefixes errors (csvrecords.New).
func NewCSVRecords(r io.Reader, name string, lim CSVLimits) *CSVRecords {
	return csvrecords.New(r, name, lim)
}

// IsHeaderRow reports whether rec is a header: a row in which no field is a number.
func IsHeaderRow(rec []string) bool { return csvrecords.IsHeaderRow(rec) }

// ParseFinite parses a CSV field as a finite number within the float32 range.
func ParseFinite(s string) (float32, error) { return csvrecords.ParseFinite(s) }
