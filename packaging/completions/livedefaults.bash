# bash completion for livedefaults and defaults (LiveDefaults): installed as
# /usr/share/bash-completion/completions/livedefaults, with defaults a link to it.
# The candidates come from the command itself (`livedefaults __complete <word> ...`), so no property
# list is ever parsed here. `defaults` is completed only when it is LiveDefaults' command (it is
# GNUstep's on machines where gnustep-base-runtime has the name).
_livedefaults() {
    local command=${COMP_WORDS[0]} path line
    path=$(type -P -- "$command") || return 0
    path=$(readlink -f -- "$path")
    [[ ${path##*/} == livedefaults ]] || return 0
    COMPREPLY=()
    while IFS= read -r line; do
        COMPREPLY+=("$line")
    done < <("$path" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
    if ((${#COMPREPLY[@]} == 0)); then
        # A path domain, or import/export's file: the shell's own file names.
        compopt -o default 2>/dev/null
    else
        compopt -o filenames 2>/dev/null  # quotes candidates with spaces
    fi
    return 0
}
complete -F _livedefaults livedefaults defaults
