
Hello World!