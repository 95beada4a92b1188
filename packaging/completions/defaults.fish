# `defaults` is completed as livedefaults (which checks that defaults is LiveDefaults' command).
source /usr/share/fish/vendor_completions.d/livedefaults.fish
