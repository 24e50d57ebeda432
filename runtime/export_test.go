package runtime

// StudentQuantile exports studentQuantile to the tests.
var StudentQuantile = studentQuantile
