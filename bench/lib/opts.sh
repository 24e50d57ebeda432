# bench/lib/opts.sh: the option parser the bench scripts share (and dir_settings, the record of the
# settings a run directory's cached runs were made with); source it, then call
#
#   parse_opts USAGE QUICK FLAG=VAR... -- "$@"
#
# "FLAG VALUE" sets the variable VAR to VALUE and VARset to 1 (a value given, not the default);
# FLAG=VAR:int takes only a whole number (the scripts do arithmetic with it, and bash arithmetic
# would evaluate any other word as an expression); FLAG=VAR:pos only a positive decimal number
# between 1e-12 and 1e6 (1e-3, 0.001, 3; not 0, a sign, nan, inf, nor what a float64 reads as 0
# or infinity: a learning rate, a step size — the trainer's range).
#
# pos_norm X prints the positive number X as printf %g writes it in the C locale (1e-3 and 0.001
# are both 0.001), for names and records that must not depend on how it was typed.
# --quick sets quick=1 and then each NAME=VALUE word of QUICK; with QUICK empty, --quick is not
# an option. @ARRAY:MAX collects up to MAX positional words (those not starting with "-") into
# the array ARRAY, which the caller declares; without it a positional word is an error. Anything
# else (an unknown flag, a flag without its value, a positional word too many) prints USAGE to
# stderr and exits with status 2.
pos_norm() {
	LC_ALL=C printf %g "$1"
}

# dir_settings SCRIPT DIR SETTINGS GLOB: DIR/settings records the settings (one line) that the
# cached runs in DIR — the files matching GLOB there — were made with, beyond what their names
# say. With no such file yet it writes SETTINGS (whatever was recorded applies to nothing);
# otherwise it exits with status 2, naming both, unless the record equals SETTINGS — or says how
# to adopt a DIR made before the records (session 28).
dir_settings() {
	local script=$1 dir=$2 settings=$3 glob=$4
	if ! compgen -G "$dir/$glob" >/dev/null; then
		echo "$settings" >"$dir/settings.tmp"
		mv "$dir/settings.tmp" "$dir/settings"
	elif [[ ! -f $dir/settings ]]; then
		printf '%s: %s holds runs but no record of their settings (%s; written since session 28):\n' "$script" "$dir" "$dir/settings" >&2
		printf 'use another --out, or if they were made with this run'"'"'s settings, record them with\n  echo '"'"'%s'"'"' > %s\n' "$settings" "$dir/settings" >&2
		exit 2
	elif [[ $(<"$dir/settings") != "$settings" ]]; then
		printf '%s: %s holds runs made with\n  %s\nthis run asks\n  %s\nuse another --out\n' "$script" "$dir" "$(<"$dir/settings")" "$settings" >&2
		exit 2
	fi
}

parse_opts() {
	local usage=$1 quickset=$2 a var posvar="" posmax=0
	local -A opt_vars=()
	shift 2
	while (($#)) && [[ $1 != -- ]]; do
		if [[ $1 =~ ^@([A-Za-z_][A-Za-z0-9_]*):([0-9]+)$ ]]; then
			posvar=${BASH_REMATCH[1]} posmax=${BASH_REMATCH[2]}
		else
			opt_vars[${1%%=*}]=${1#*=}
		fi
		shift
	done
	shift
	while (($#)); do
		if [[ -n $posvar && $1 != -* ]]; then
			local -n opt_pos_ref=$posvar
			if ((${#opt_pos_ref[@]} >= posmax)); then
				echo "$usage" >&2
				exit 2
			fi
			opt_pos_ref+=("$1")
			shift
		elif [[ $1 == --quick && -n $quickset ]]; then
			quick=1
			for a in $quickset; do printf -v "${a%%=*}" %s "${a#*=}"; done
			shift
		elif [[ -n ${opt_vars[$1]-} ]] && (($# >= 2)); then
			var=${opt_vars[$1]%:*}
			if [[ ${opt_vars[$1]} == *:int && ! $2 =~ ^[0-9]{1,9}$ ]]; then
				echo "$1 takes a whole number, not \"$2\"" >&2
				echo "$usage" >&2
				exit 2
			fi
			if [[ ${opt_vars[$1]} == *:pos ]] && ! { [[ $2 =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]{1,3})?$ ]] &&
				LC_ALL=C awk -v x="$2" 'BEGIN { exit !(x + 0 >= 1e-12 && x + 0 <= 1e6) }'; }; then
				echo "$1 takes a positive number, not \"$2\" (1e-12 to 1e6)" >&2
				echo "$usage" >&2
				exit 2
			fi
			printf -v "$var" %s "$2"
			printf -v "${var}set" %s 1
			shift 2
		else
			echo "$usage" >&2
			exit 2
		fi
	done
}
