#compdef gsv

_gsv_completion() {
  eval $(env _TYPER_COMPLETE_ARGS="${words[1,$CURRENT]}" _GSV_COMPLETE=complete_zsh gsv)
}

compdef _gsv_completion gsv
