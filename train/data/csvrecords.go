package data

import "github.com/edgebnn/edgebnn/internal/csvrecords"

// CSVLimits bound what the CSV readers accept (csvrecords.Limits: the record reader that
// predict's CSV inputs share, which the board binary links without this package).
type CSVLimits = csvrecords.Limits
