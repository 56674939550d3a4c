
Hello World!