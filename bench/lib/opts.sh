# bench/lib/opts.sh: the option parser the bench scripts share (and dir_settings, the record of the
# settings a run directory's cached runs were made with, and env_count for counts from the
# environment); source it, then call
#
#   parse_opts USAGE QUICK FLAG=VAR[:TYPE]... [@ARRAY:MAX] -- "$@"
#
# "FLAG VALUE" sets the variable VAR to VALUE and VARset to 1 (a value given, not the default;
# every VARset of the spec starts at 0, whatever the environment holds). A value is never empty.
# TYPE int takes only a whole number without leading zeros (the scripts do arithmetic with it:
# bash arithmetic evaluates any other word as an expression, which can run commands, and reads
# 010 as octal); pos only a positive decimal number between 1e-12 and 1e6 (1e-3, 0.001, 3; not 0,
# a sign, nan, inf, nor what a float64 reads as 0 or infinity: a learning rate, a step size —
# the trainer's range); path a path without white space or the glob characters * ? [ that does
# not start with "-" (the scripts build lists of files in words from it).
#
# --quick sets quick=1 and, once the options are read, each NAME=VALUE word of QUICK whose
# variable was not given (NAMEset is not 1), so that --seeds 5 --quick and --quick --seeds 5 both
# run 5 seeds; with QUICK empty, --quick is not an option. @ARRAY:MAX collects up to MAX
# positional words (those not starting with "-", and every word after "--") into the array
# ARRAY, which the caller initialises (ARRAY=()); without it a positional word is an error.
# Anything else (an unknown flag, a flag without its value, an empty word, a positional word too
# many) prints USAGE to stderr and exits with status 2.
#
# pos_norm X prints the positive number X as printf %g writes it in the C locale (1e-3 and 0.001
# are both 0.001), for names and records that must not depend on how it was typed.
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

# env_count NAME DEFAULT MIN MAX: the whole number in the environment variable NAME (DEFAULT when
# it is unset or empty), refused with status 2 unless MIN ≤ it ≤ MAX — a count such as JOBS, read
# without letting bash arithmetic evaluate the variable's text.
env_count() {
	local _ec_v=${!1:-$2}
	if [[ ! $_ec_v =~ ^(0|[1-9][0-9]{0,8})$ ]] || ((_ec_v < $3 || _ec_v > $4)); then
		echo "$1 must be a whole number from $3 to $4, not \"$_ec_v\"" >&2
		exit 2
	fi
	printf %s "$_ec_v"
}

parse_opts() {
	local _po_usage=$1 _po_quick=$2 _po_a _po_var _po_type _po_posvar="" _po_posmax=0 _po_rest=0
	local -A _po_vars=() _po_given=()
	shift 2
	while (($#)) && [[ $1 != -- ]]; do
		if [[ $1 =~ ^@([A-Za-z][A-Za-z0-9_]*):(0|[1-9][0-9]{0,3})$ ]]; then
			_po_posvar=${BASH_REMATCH[1]} _po_posmax=${BASH_REMATCH[2]}
		elif [[ $1 =~ ^(-[-A-Za-z0-9]+)=([A-Za-z][A-Za-z0-9_]*)(:(int|pos|path))?$ ]]; then
			_po_vars[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}${BASH_REMATCH[3]}
			printf -v "${BASH_REMATCH[2]}set" %s 0
		else
			echo "parse_opts: bad spec \"$1\"" >&2
			exit 2
		fi
		shift
	done
	shift
	[[ -z $_po_quick ]] || quick=0
	if [[ -n $_po_posvar ]]; then
		local -n _po_pos=$_po_posvar
		_po_pos+=()
	fi
	while (($#)); do
		if [[ -z $1 ]]; then
			echo "$_po_usage" >&2
			exit 2
		elif ((_po_rest)) || [[ $1 != -* ]]; then
			if [[ -z $_po_posvar ]] || ((${#_po_pos[@]} >= _po_posmax)); then
				echo "$_po_usage" >&2
				exit 2
			fi
			_po_pos+=("$1")
			shift
		elif [[ $1 == -- ]]; then
			_po_rest=1
			shift
		elif [[ $1 == --quick && -n $_po_quick ]]; then
			quick=1
			shift
		elif [[ -n ${_po_vars[$1]-} ]] && (($# >= 2)); then
			_po_var=${_po_vars[$1]%:*} _po_type=
			[[ ${_po_vars[$1]} == *:* ]] && _po_type=${_po_vars[$1]##*:}
			if [[ -z $2 ]]; then
				echo "$1 takes a value, not an empty word" >&2
				echo "$_po_usage" >&2
				exit 2
			fi
			case $_po_type in
			int)
				if [[ ! $2 =~ ^(0|[1-9][0-9]{0,8})$ ]]; then
					echo "$1 takes a whole number, not \"$2\"" >&2
					echo "$_po_usage" >&2
					exit 2
				fi
				;;
			pos)
				if ! { [[ $2 =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]{1,3})?$ ]] &&
					LC_ALL=C awk -v x="$2" 'BEGIN { exit !(x + 0 >= 1e-12 && x + 0 <= 1e6) }'; }; then
					echo "$1 takes a positive number, not \"$2\" (1e-12 to 1e6)" >&2
					echo "$_po_usage" >&2
					exit 2
				fi
				;;
			path)
				if [[ $2 =~ [[:space:]*?[] || $2 == -* ]]; then
					echo "$1 takes a path without white space or * ? [ that does not start with -, not \"$2\"" >&2
					echo "$_po_usage" >&2
					exit 2
				fi
				;;
			esac
			printf -v "$_po_var" %s "$2"
			printf -v "${_po_var}set" %s 1
			_po_given[$_po_var]=1
			shift 2
		else
			echo "$_po_usage" >&2
			exit 2
		fi
	done
	if [[ -n $_po_quick && $quick == 1 ]]; then
		for _po_a in $_po_quick; do
			_po_var=${_po_a%%=*}
			[[ -n ${_po_given[$_po_var]-} ]] || printf -v "$_po_var" %s "${_po_a#*=}"
		done
	fi
}
