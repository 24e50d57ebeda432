#!/usr/bin/env Rscript
# Exports the Wisconsin breast cancer data (Wolberg & Mangasarian 1990; UCI
# "breast-cancer-wisconsin"; R's mlbench BreastCancer, 699 rows) to CSV for paper 000's
# appendix D (its "Breast-cancer-scale", LIBSVM's scaled copy of the same data): the 16 rows
# with a missing Bare.nuclei dropped (683 rows, as LIBSVM), the nine cytological attributes
# (integers 1–10; the sample code number Id left out) and the target, 1 for malignant and 0
# for benign.
#
#   apt-get install -y r-cran-mlbench     # Debian: R's mlbench and Rscript
#   Rscript bench/uci/export_breastcancer.R bench/data/breast_cancer_wisconsin.csv
args <- commandArgs(trailingOnly = TRUE)
out <- if (length(args) >= 1) args[1] else "bench/data/breast_cancer_wisconsin.csv"
suppressPackageStartupMessages(library(mlbench))
data(BreastCancer)
d <- BreastCancer[complete.cases(BreastCancer), ]
x <- as.data.frame(lapply(d[, 2:10], function(v) as.integer(as.character(v))))
x$malignant <- as.integer(d$Class == "malignant")
stopifnot(nrow(x) == 683, ncol(x) == 10, !anyNA(x), all(x$malignant %in% c(0L, 1L)))
write.csv(x, out, row.names = FALSE, quote = FALSE)
