# fish completion for livedefaults (LiveDefaults), installed in /usr/share/fish/vendor_completions.d;
# defaults.fish there loads it for `defaults`. The candidates come from the command itself
# (`livedefaults __complete <word> ...`), so no property list is parsed here. `defaults` is completed only
# when it is LiveDefaults' command (GNUstep's has the name where gnustep-base-runtime is installed).
function __livedefaults_complete
    # An empty current word must stay a word: it asks for the candidates of a new argument.
    set -l current (commandline -ct)
    set -q current[1]; or set current ''
    set -l words (commandline -opc) $current
    set -l program (command -v -- $words[1])
    or return
    set program (realpath -- $program)
    test (basename -- $program) = livedefaults
    or return
    set -l candidates ($program __complete $words[2..-1] 2>/dev/null)
    if set -q candidates[1]
        printf '%s\n' $candidates
    else
        # A path domain, or import/export's file.
        __fish_complete_path $current
    end
end
complete -c livedefaults -f -a '(__livedefaults_complete)'
complete -c defaults -f -a '(__livedefaults_complete)'
