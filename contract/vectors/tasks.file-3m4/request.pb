
file-3m4