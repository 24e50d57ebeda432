#!/usr/bin/env Rscript
# Exports the Boston housing data (Harrison & Rubinfeld 1978; UCI "housing"; R's mlbench
# BostonHousing, 506 rows in the original order) to CSV: the 13 features, then the target medv
# (median home value, $1000s). chas is a factor in mlbench and is written as 0/1.
#
#   apt-get install -y r-cran-mlbench     # Debian: R's mlbench and Rscript
#   Rscript bench/uci/export_boston.R bench/data/boston_housing.csv
args <- commandArgs(trailingOnly = TRUE)
out <- if (length(args) >= 1) args[1] else "bench/data/boston_housing.csv"
suppressPackageStartupMessages(library(mlbench))
data(BostonHousing)
d <- BostonHousing
d$chas <- as.integer(as.character(d$chas))
stopifnot(nrow(d) == 506, ncol(d) == 14, all(d$chas %in% c(0L, 1L)), !anyNA(d))
write.csv(d, out, row.names = FALSE, quote = FALSE)
