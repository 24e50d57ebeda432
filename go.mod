module github.com/edgebnn/edgebnn

go 1.26.0

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/nlpodyssey/gopickle v0.2.0 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
