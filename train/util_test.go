package train

import "strconv"

func fmtF(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
