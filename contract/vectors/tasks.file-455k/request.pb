
	file-455k