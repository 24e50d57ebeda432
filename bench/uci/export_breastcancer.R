#!/usr/bin/env Rscript
# Exports the Wisconsin breast cancer data (Wolberg & Mangasarian 1990; UCI
# "breast-cancer-wisconsin"; R's mlbench BreastCancer, 699 rows) to CSV for paper 000's
# appendix D (its "Breast-cancer-scale", LIBSVM's scaled copy of the same data): the 16 rows
# with a missing Bare.nuclei dropped (683 rows, as LIBSVM), the nine cytological attributes
# (integers 1–10; the sample code number Id left out) and the target, 1 for malignant and 0
# for benign.
#
# With --libsvm the sample code number comes first, as in LIBSVM's "breast-cancer" (and its
# "-scale" copy, paper 000's data set), whose ten features are Id and the nine attributes: its
# first row, "2 1:-0.860107 2:-0.111111 3:-1 4:-1 5:-1 6:-0.777778 7:-1 8:-0.555556 9:-1 10:-1",
# is row 1 here min-max scaled to [−1, 1] (Id 1000025 between 63375 and 13454352: −0.8601073).
#
#   apt-get install -y r-cran-mlbench     # Debian: R's mlbench and Rscript
#   Rscript bench/uci/export_breastcancer.R bench/data/breast_cancer_wisconsin.csv
#   Rscript bench/uci/export_breastcancer.R bench/data/breast_cancer_libsvm.csv --libsvm
args <- commandArgs(trailingOnly = TRUE)
libsvm <- "--libsvm" %in% args
args <- args[args != "--libsvm"]
out <- if (length(args) >= 1) args[1] else "bench/data/breast_cancer_wisconsin.csv"
suppressPackageStartupMessages(library(mlbench))
data(BreastCancer)
d <- BreastCancer[complete.cases(BreastCancer), ]
x <- as.data.frame(lapply(d[, 2:10], function(v) as.integer(as.character(v))))
if (libsvm) x <- cbind(Id = as.numeric(as.character(d$Id)), x)
x$malignant <- as.integer(d$Class == "malignant")
stopifnot(nrow(x) == 683, ncol(x) == 10 + libsvm, !anyNA(x), all(x$malignant %in% c(0L, 1L)))
write.csv(x, out, row.names = FALSE, quote = FALSE)
