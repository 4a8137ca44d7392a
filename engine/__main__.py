from kgqa.faces.cli import main

main()
